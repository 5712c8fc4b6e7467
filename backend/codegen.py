"""Generate the source of a horizontally fused kernel from chain signatures.

One generator serves four uses: per-op CUDA kernels (one-node groups), fused CUDA
kernels, and the same two as Numba CPU `njit(parallel=True)` functions. The CUDA grid
is 2-D: y over the group's chains (slots), x grid-striding over rows. Data lives in
typed pools addressed by per-column descriptors, so every kernel has the same
parameter list and kernels are cached by signature alone; operator parameters live in
per-slot device arrays.

Per slot, params: fpar[slot, 2k + {0,1}] and ipar[slot, 4k + {0,1,2,3}] for op k:
  fill_null f0/i0 value; sigrid_hash i0 salt, i1 max_value, i2/i3 division magic and
  shift; bucketize i0 start, i1 count
  in aux_f; logit f0 eps; boxcox f0 lambda; clamp(_list) f0/f1 lo/hi (i0/i1 for ints);
  firstx i0 x; onehot f0 low, f1 high, i0 num_classes; ngram i0 n; mapid i0 start,
  i1 count in aux_i.
Descriptors: desc[col] = (values base, offsets base or -1, validity base or -1).
"""

from __future__ import annotations

import re

FLOAT_POOL, INT_POOL = "f32", "i64"
MAX_UNROLL = 8
"""The most list elements a thread of a values kernel computes side by side (chain_body)."""
SLOT_CONSTANT = re.compile(r"\b(ipar|fpar)\[slot, (\d+)\]|\bdesc\[(src|dst), (\d+)\]")
"""A per-slot parameter or descriptor read: the same for every row of a slot."""

PARAMS = ("desc, f32, i64, offs, valid, fpar, ipar, aux_f, aux_i, slot_sig, slot_src, slot_dst, "
          "block_slot, slot_block0, slot_nblocks, rows")


def _pool(dtype: str) -> str:
    return FLOAT_POOL if dtype == "float32" else INT_POOL


def _zero(dtype: str) -> str:
    return "np.float32(0.0)" if dtype == "float32" else "np.int64(0)"


def _op_name(op: object) -> str:
    return op[0] if isinstance(op, tuple) else op  # type: ignore[index,return-value]


def _dtypes(sig: tuple) -> list[str]:
    """Value dtype after each op (index 0: the source)."""
    src_dtype, _, _, ops, *_ = sig
    out = ["float32" if src_dtype == "float32" else "int64"]
    for op in ops:
        name = _op_name(op)
        cur = out[-1]
        if name == "cast":
            cur = "float32" if op[1] == "float32" else "int64"
        elif name in ("sigrid_hash", "bucketize", "onehot", "mapid"):
            cur = "int64"
        out.append(cur)
    return out


def length_lines(p: str, sig: tuple) -> list[str]:
    """Code computing {p}L0..{p}LK (list lengths after each op) and {p}null for row r."""
    _, src_shape, nullable, ops, *_ = sig
    lines = []
    if src_shape == "list":
        lines += [f"{p}ob = desc[src, 1]",
                  f"{p}st = offs[{p}ob + r]",
                  f"{p}L0 = offs[{p}ob + r + 1] - {p}st"]
    else:
        lines += [f"{p}st = r", f"{p}L0 = 1"]
    lines.append(f"{p}null = valid[desc[src, 2] + r] == 0" if nullable else f"{p}null = False")
    for k, op in enumerate(ops, start=1):
        name, prev = _op_name(op), f"{p}L{k - 1}"
        if name == "fill_null" and src_shape == "list":
            lines.append(f"{p}L{k} = 1 if {p}null else {prev}")
        elif name == "firstx":
            lines.append(f"{p}x{k} = ipar[slot, {4 * (k - 1)}]")
            lines.append(f"{p}L{k} = min({prev}, max({p}x{k}, 0))")
        elif name == "ngram":
            lines.append(f"{p}L{k} = ngram_length(ipar[slot, {4 * (k - 1)}], {prev})")
        elif name == "onehot":
            lines.append(f"{p}L{k} = ipar[slot, {4 * (k - 1)}]")
        else:
            lines.append(f"{p}L{k} = {prev}")
    return lines


def value_lines(p: str, sig: tuple, division: str, e: str | None = None,
                index: str = "j") -> list[str]:
    """Code computing {e}v{K}, the chain's value at output index `index` of row r. Row
    values (lengths, start, null) are named with prefix `p`, each element's with `e`
    (default `p`): an unrolled loop computes several elements side by side."""
    src_dtype, src_shape, _, ops, *_ = sig
    dts = _dtypes(sig)
    K = len(ops)
    row, p = p, (e or p)
    lines = [f"{p}i{K} = {index}"]
    for k in range(K, 0, -1):  # output index -> input index, through the shape ops
        name = _op_name(ops[k - 1])
        if name == "ngram":
            lines.append(f"{p}i{k - 1} = ngram_source({p}i{k}, ipar[slot, {4 * (k - 1)}], "
                         f"{row}L{k - 1})")
        elif name == "onehot":
            lines.append(f"{p}oh{k} = {p}i{k}")
            lines.append(f"{p}i{k - 1} = 0")
        else:
            lines.append(f"{p}i{k - 1} = {p}i{k}")
    pool = _pool(src_dtype)
    if src_shape == "list":
        lines.append(f"{p}v0 = {pool}[desc[src, 0] + {row}st + {p}i0] if {p}i0 < {row}L0 "
                     f"else {_zero(dts[0])}")
    else:
        lines.append(f"{p}v0 = {pool}[desc[src, 0] + r]")
    for k, op in enumerate(ops, start=1):
        name, v, f, i = _op_name(op), f"{p}v{k - 1}", 2 * (k - 1), 4 * (k - 1)
        out = f"{p}v{k}"
        if name == "fill_null":
            fill = f"fpar[slot, {f}]" if dts[k] == "float32" else f"ipar[slot, {i}]"
            cast = "np.float32" if dts[k] == "float32" else "np.int64"
            lines.append(f"{out} = {cast}({fill}) if {row}null else {v}")
        elif name == "cast":
            if dts[k] == "float32":
                lines.append(f"{out} = np.float32({v})")
            elif dts[k - 1] == "float32":
                lines.append(f"{out} = round_to_int64({v})")
            else:
                lines.append(f"{out} = np.int64({v})")
        elif name == "sigrid_hash" and division == "magic":
            lines.append(f"{out} = sigrid_hash_magic({v}, ipar[slot, {i}], ipar[slot, {i + 1}], "
                         f"ipar[slot, {i + 2}], ipar[slot, {i + 3}])")
        elif name == "sigrid_hash":
            lines.append(f"{out} = sigrid_hash({v}, ipar[slot, {i}], ipar[slot, {i + 1}])")
        elif name == "bucketize":
            lines.append(f"{out} = bucketize(np.float64({v}), aux_f, ipar[slot, {i}], "
                         f"ipar[slot, {i + 1}])")
        elif name == "logit":
            lines.append(f"{out} = logit({v}, fpar[slot, {f}])")
        elif name == "boxcox":
            lines.append(f"{out} = boxcox({v}, fpar[slot, {f}])")
        elif name in ("clamp", "clamp_list"):
            if dts[k] == "float32":
                lo, hi = f"np.float32(fpar[slot, {f}])", f"np.float32(fpar[slot, {f + 1}])"
            else:
                lo, hi = f"ipar[slot, {i}]", f"ipar[slot, {i + 1}]"
            lines.append(f"{p}a{k} = {lo} if {v} < {lo} else {v}")
            lines.append(f"{out} = {hi} if {p}a{k} > {hi} else {p}a{k}")
        elif name == "mapid":
            lines.append(f"{out} = mapid({v}, aux_i, ipar[slot, {i}], ipar[slot, {i + 1}])")
        elif name == "onehot":
            lines.append(f"{p}c{k} = onehot_class(np.float32({v}), fpar[slot, {f}], "
                         f"fpar[slot, {f + 1}], ipar[slot, {i}]) if {row}L{k - 1} > 0 "
                         "else np.int64(0)")
            lines.append(f"{out} = np.int64(1) if {p}oh{k} == {p}c{k} else np.int64(0)")
        else:  # firstx, ngram: values pass through
            lines.append(f"{out} = {v}")
    return lines


def chain_body(p: str, sig: tuple, part: str, division: str, lanes: bool = False,
               unroll: int = 1) -> list[str]:
    """Statements for one row r of one chain. part: 'lengths' or 'values'. With `lanes`,
    the row's elements are split over the 32 lanes of a warp (lane, lane + 32, ...).
    With `unroll` > 1 each pass of a list's element loop computes that many elements side
    by side (the later ones clamped to the list's last, their stores guarded), so a
    thread has independent work to issue while one element's hash waits on its last
    instruction."""
    ops, sink_dtype, sink_shape = sig[3], sig[4], sig[5]
    K = len(ops)
    lines = length_lines(p, sig)
    if part == "lengths":
        if sink_shape == "list":
            lines.append(f"offs[desc[dst, 1] + r + 1] = {p}L{K}")
        return lines
    pool = _pool(sink_dtype)
    if sink_shape == "list":
        lines.append(f"{p}ost = desc[dst, 0] + offs[desc[dst, 1] + r]")
    if sink_shape == "list" and unroll > 1:
        step, last = (32 if lanes else 1), f"{p}L{K} - 1"
        lines.append(f"for j in range({'lane' if lanes else 0}, {p}L{K}, {step * unroll}):")
        for u in range(unroll):
            index = "j" if u == 0 else f"min(j + {u * step}, {last})"
            lines += ["    " + s for s in value_lines(p, sig, division, f"{p}u{u}_", index)]
        lines.append(f"    {pool}[{p}ost + j] = {p}u0_v{K}")
        for u in range(1, unroll):
            lines.append(f"    if j + {u * step} <= {last}:")
            lines.append(f"        {pool}[{p}ost + j + {u * step}] = {p}u{u}_v{K}")
    elif sink_shape == "list":
        lines.append(f"for j in range(lane, {p}L{K}, 32):" if lanes else
                     f"for j in range({p}L{K}):")
        lines += ["    " + s for s in value_lines(p, sig, division)]
        lines.append(f"    {pool}[{p}ost + j] = {p}v{K}")
    else:
        lines.append("j = 0")
        lines += value_lines(p, sig, division)
        lines.append(f"{pool}[desc[dst, 0] + r] = {p}v{K}")
    return lines


def hoist_slot_constants(p: str, body: list[str]) -> tuple[list[str], list[str]]:
    """`body` with every per-slot parameter and descriptor read (SLOT_CONSTANT) replaced
    by a local, and the statements that read each once, to go before the row loop. The
    compiler cannot hoist them itself: the kernel writes the pools, which might alias
    the parameter arrays, so it reloaded seven of them for every element."""
    names: dict[str, str] = {}

    def local(m: re.Match) -> str:
        array, index = (m.group(1), m.group(2)) if m.group(1) else \
            (f"desc_{m.group(3)}", m.group(4))
        return names.setdefault(m.group(0), f"{p}{array}{index}")

    body = [SLOT_CONSTANT.sub(local, line) for line in body]
    return body, [f"{name} = {expr}" for expr, name in names.items()]


def kernel_source(signatures: list[tuple], part: str, target: str, name: str,
                  division: str = "magic", unroll: int = 1) -> str:
    """Source of one kernel over `signatures` (slot_sig[slot] indexes this list).

    target 'cuda': a 1-D grid; block b serves slot block_slot[b], whose blocks
      slot_block0[slot] .. + slot_nblocks[slot] grid-stride over its rows. Slots get blocks
      in proportion to their work, so a long-list slot is not left running alone.
    target 'cpu': a serial loop over slots, prange over rows.
    division 'magic': sigrid_hash's floor-mod by multiply-and-shift; 'mod': a 64-bit `%`.
    unroll: list elements a thread computes side by side (chain_body; values, CUDA only).
    """
    out = [f"def {name}({PARAMS}):"]
    if target == "cuda":
        out += ["    slot = block_slot[cuda.blockIdx.x]",
                "    first = (cuda.blockIdx.x - slot_block0[slot]) * cuda.blockDim.x"
                " + cuda.threadIdx.x",
                "    stride = slot_nblocks[slot] * cuda.blockDim.x"]
        indent = "    "
    else:
        out += ["    for slot in range(slot_sig.shape[0]):"]
        indent = "        "
    out += [f"{indent}sig = slot_sig[slot]", f"{indent}src = slot_src[slot]",
            f"{indent}dst = slot_dst[slot]"]
    for s, sig in enumerate(signatures):
        out.append(f"{indent}{'if' if s == 0 else 'elif'} sig == {s}:")
        warp = target == "cuda" and part == "values" and sig[6] == "warp"
        if warp:  # a warp per row: rows stride by warps, elements by lanes
            out.append(f"{indent}    lane = first % 32")
            loop = "range(first // 32, rows, stride // 32)"
        else:
            loop = "range(first, rows, stride)" if target == "cuda" else "prange(rows)"
        body, constants = hoist_slot_constants(
            f"s{s}_", chain_body(f"s{s}_", sig, part, division, lanes=warp,
                                 unroll=unroll if target == "cuda" else 1))
        out += [f"{indent}    {line}" for line in constants]
        out.append(f"{indent}    for r in {loop}:")
        out += [f"{indent}        {line}" for line in body]
    if len(out) and not signatures:
        out.append(f"{indent}pass")
    return "\n".join(out) + "\n"
