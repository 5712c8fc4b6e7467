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
                index: str = "j", at_ngram_input: bool = False) -> list[str]:
    """Code computing {e}v{K}, the chain's value at output index `index` of row r. Row
    values (lengths, start, null) are named with prefix `p`, each element's with `e`
    (default `p`): an unrolled loop computes several elements side by side. With
    `at_ngram_input`, `index` is an element of the ngram's input list instead (the value
    is the same in every window that holds it: source_lines)."""
    src_dtype, src_shape, _, ops, *_ = sig
    dts = _dtypes(sig)
    K = len(ops)
    row, p = p, (e or p)
    lines = [f"{p}i{K} = {index}"]
    for k in range(K, 0, -1):  # output index -> input index, through the shape ops
        name = _op_name(ops[k - 1])
        if name == "ngram" and not at_ngram_input:
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


def chain_body(p: str, sig: tuple, part: str, division: str, lanes: int = 1,
               unroll: int = 1) -> list[str]:
    """Statements for one row r of one chain. part: 'lengths' or 'values'. With `lanes`
    > 1, the row's elements are split over that many lanes (lane, lane + lanes, ...).
    With `unroll` > 1 each pass of a list's element loop computes that many elements side
    by side (the later ones clamped to the list's last, their stores guarded), so a
    thread has independent work to issue while one element's hash waits on its last
    instruction."""
    sink_dtype, sink_shape = sig[4], sig[5]
    K = len(sig[3])
    lines = length_lines(p, sig)
    if part == "lengths":
        if sink_shape == "list":
            lines.append(f"offs[desc[dst, 1] + r + 1] = {p}L{K}")
        return lines
    if sink_shape == "list":
        fixed = sig[7]
        if fixed is None:  # offsets from the lengths kernel and the scan
            lines.append(f"{p}ost = desc[dst, 0] + offs[desc[dst, 1] + r]")
        else:  # offsets known: written here, no scan
            lines += [f"{p}L{K} = {fixed}",
                      f"{p}ost = desc[dst, 0] + r * {fixed}",
                      f"offs[desc[dst, 1] + r + 1] = (r + 1) * {fixed}",
                      "if r == 0:",
                      "    offs[desc[dst, 1]] = 0"]
        return lines + element_lines(p, sig, division, lanes, unroll)
    lines.append("j = 0")
    lines += value_lines(p, sig, division)
    lines.append(f"{_pool(sink_dtype)}[desc[dst, 0] + r] = {p}v{K}")
    return lines


def element_lines(p: str, sig: tuple, division: str, lanes: int = 1,
                  unroll: int = 1) -> list[str]:
    """The loop writing a list sink's elements for row r from {p}ost, where the row's
    values start in the pool (chain_body's `lanes` and `unroll`)."""
    K, pool = len(sig[3]), _pool(sig[4])
    if sources_first(sig):
        return source_lines(p, sig, division, lanes)
    lines = []
    if unroll > 1:
        step, last = lanes, f"{p}L{K} - 1"
        lines.append(f"for j in range({'lane' if lanes > 1 else 0}, {p}L{K}, "
                     f"{step * unroll}):")
        for u in range(unroll):
            index = "j" if u == 0 else f"min(j + {u * step}, {last})"
            lines += ["    " + s for s in value_lines(p, sig, division, f"{p}u{u}_", index)]
        lines.append(f"    {pool}[{p}ost + j] = {p}u0_v{K}")
        for u in range(1, unroll):
            lines.append(f"    if j + {u * step} <= {last}:")
            lines.append(f"        {pool}[{p}ost + j + {u * step}] = {p}u{u}_v{K}")
    else:
        lines.append(f"for j in range(lane, {p}L{K}, {lanes}):" if lanes > 1 else
                     f"for j in range({p}L{K}):")
        lines += ["    " + s for s in value_lines(p, sig, division)]
        lines.append(f"    {pool}[{p}ost + j] = {p}v{K}")
    return lines


def sources_first(sig: tuple) -> bool:
    """Whether a chain's list values are computed once per element of its ngram's input
    (source_lines) rather than once per output element (chains.Chain.signature)."""
    return bool(sig[8])


def source_lines(p: str, sig: tuple, division: str, lanes: int = 1) -> list[str]:
    """The loop writing a list sink's elements for row r from {p}ost, computing each
    element of the chain's one ngram's input once and storing it in every window that
    holds it (every other op maps values one to one, so its value is the same there):
    ngram(n) over L ids writes up to n copies of each, so a hash after it runs up to n
    times fewer. Input element s sits in windows w0..w1 (w0 = max(0, s - m + 1), w1 =
    min(s, L - m), m = min(n, L)) at output w * (m - 1) + s, which grows with s: the first
    s whose first output lies past the sink's length ends the loop."""
    K, pool = len(sig[3]), _pool(sig[4])
    g = [_op_name(op) for op in sig[3]].index("ngram") + 1
    length = f"{p}L{g - 1}"
    lines = [f"{p}gn = ipar[slot, {4 * (g - 1)}]",
             f"{p}gm = {p}gn if {p}gn < {length} else {length}",
             f"{p}glast = {length} - {p}gm",
             f"for {p}s in range({'lane, ' if lanes > 1 else ''}{length}"
             f"{f', {lanes}' if lanes > 1 else ''}):",
             f"    {p}w0 = {p}s - {p}gm + 1 if {p}s >= {p}gm else 0",
             f"    if {p}w0 * ({p}gm - 1) + {p}s >= {p}L{K}:",
             "        break"]
    lines += ["    " + x for x in value_lines(p, sig, division, index=f"{p}s",
                                                at_ngram_input=True)]
    lines += [f"    {p}w1 = {p}s if {p}s < {p}glast else {p}glast",
              f"    for {p}w in range({p}w0, {p}w1 + 1):",
              f"        {p}j = {p}w * ({p}gm - 1) + {p}s",
              f"        if {p}j < {p}L{K}:",
              f"            {pool}[{p}ost + {p}j] = {p}v{K}"]
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
        lanes = sig[6] if target == "cuda" and part == "values" else 1
        if lanes > 1:  # rows stride by groups of lanes, a row's elements by lane
            out.append(f"{indent}    lane = first % {lanes}")
            loop = f"range(first // {lanes}, rows, stride // {lanes})"
        else:
            loop = "range(first, rows, stride)" if target == "cuda" else "prange(rows)"
        body, constants = hoist_slot_constants(
            f"s{s}_", chain_body(f"s{s}_", sig, part, division, lanes=lanes,
                                 unroll=unroll if target == "cuda" else 1))
        out += [f"{indent}    {line}" for line in constants]
        out.append(f"{indent}    for r in {loop}:")
        out += [f"{indent}        {line}" for line in body]
    if len(out) and not signatures:
        out.append(f"{indent}pass")
    return "\n".join(out) + "\n"


TILE_ROWS = 1024
"""Rows of one slot a block of the one-pass kernel takes at a time, at most: each thread
computes min(tile rows, batch rows) // threads rows, at least one."""
EPOCHS = 1 << 15
"""Launches told apart in the one-pass kernel's tile status words (one would do: every
launch overwrites every status; the tag only has to differ from the launch before)."""
STATUS_BITS = 45
"""A tile status word: epoch << 47 | flag << 45 | value (flag 1: the tile's own output
elements; 2: those of every tile of its slot up to and including it)."""
TILED_PARAMS = ("desc, f32, i64, offs, valid, fpar, ipar, aux_f, aux_i, slot_sig, slot_src, "
                "slot_dst, state, rows")


TILED_PARTS = ("single", "totals", "tiles")
"""Kernels over tiles of a slot's rows (tiled_source): the one-pass kernel; and the two
kernels of a scan over tile totals, with a scan of the totals between them."""


def tiled_source(signatures: list[tuple], name: str, part: str, division: str = "magic",
                 unroll: int = 1, tile_rows: int = TILE_ROWS) -> str:
    """Source of a CUDA kernel over tiles (a slot and `tile_rows` of its rows): each tile
    computes its rows' output lengths and sums them in shared memory. The block scan is
    two levels of serial sums (a thread over its rows, some threads over 32 threads'
    sums, thread 0 over those): seven barriers a tile, where a log-step scan takes
    twenty, and the CUDA simulator, which has no warp shuffles, runs it as the GPU does.

    'single': lengths, their scan and the values of each list sink in one launch. Blocks
      take tiles in the order of a ticket counter, tile-major so that a tile's
      predecessor in its slot was taken a slot count earlier; thread 0 finds the sum of
      its slot's earlier tiles by a decoupled look-back over their status words (Merrill
      and Garland, 2016). A block only waits on tiles whose tickets were taken before its
      own, by blocks already running, so the wait ends. `state` is [ticket, blocks done,
      epoch, one status word per (slot, tile)]: the last block out zeroes the counters
      and moves the epoch on, so the next launch needs no reset.
    'totals': each tile's sum of output lengths into state[slot * (tiles + 1) + t + 1];
      the caller scans each slot's tiles + 1 entries (the first stays 0) in place.
    'tiles': each tile's rows written from its slot's scanned entry t, the sum of the
      tiles before it: the three-step kernels' work without their per-row lengths in
      memory and without the scan over every row's offset.
    Blocks grid-stride over the tiles in 'totals' and 'tiles'.
    """
    if part not in TILED_PARTS:
        raise ValueError(f"part = {part!r}: one of {', '.join(TILED_PARTS)}")
    tile_cap = max(tile_rows, 1024)
    agg, incl, mask = 1 << STATUS_BITS, 2 << STATUS_BITS, (1 << STATUS_BITS) - 1
    out = [f"def {name}({TILED_PARAMS}):",
           f"    lens = cuda.shared.array({tile_cap}, np.int64)",
           "    sums = cuda.shared.array(1024, np.int64)",
           "    chunks = cuda.shared.array(32, np.int64)",
           "    info = cuda.shared.array(2, np.int64)",
           "    tid = cuda.threadIdx.x",
           "    nt = cuda.blockDim.x",
           f"    items = max(1, min({tile_rows}, rows) // nt)",
           "    tile_rows = items * nt",
           "    nslots = slot_sig.shape[0]",
           "    tiles = max(1, (rows + tile_rows - 1) // tile_rows)",
           "    total = tiles * nslots"]
    if part == "single":
        out += ["    epoch = state[2]",
                f"    tag = epoch << {STATUS_BITS + 2}",
                "    while True:",
                "        if tid == 0:",
                "            info[0] = cuda.atomic.add(state, 0, 1)",
                "        cuda.syncthreads()",
                "        ticket = info[0]",
                "        if ticket >= total:",
                "            break"]
    else:
        out += ["    for ticket in range(cuda.blockIdx.x, total, cuda.gridDim.x):"]
    out += ["        slot = ticket % nslots",
            "        t = ticket // nslots",
            "        row0 = t * tile_rows",
            "        sig = slot_sig[slot]",
            "        src = slot_src[slot]",
            "        dst = slot_dst[slot]"]
    for s, sig in enumerate(signatures):
        p = f"s{s}_"
        K = len(sig[3])
        body: list[str] = []
        if sig[5] != "list":
            if part != "totals":
                body += ["for k in range(items):",
                         "    r = row0 + k * nt + tid",
                         "    if r < rows:"]
                body += ["        " + line for line in chain_body(p, sig, "values", division)]
            else:
                body += ["pass"]
        else:
            lengths = length_lines(p, sig)
            body += ["for k in range(items):",
                     "    i = k * nt + tid",
                     "    r = row0 + i",
                     "    if r < rows:"]
            body += ["        " + line for line in lengths]
            body += [f"        lens[i] = {p}L{K}",
                     "    else:",
                     "        lens[i] = 0",
                     "cuda.syncthreads()",
                     "acc = 0",
                     "for k in range(items):",
                     "    acc += lens[tid * items + k]",
                     "sums[tid] = acc",
                     "cuda.syncthreads()",
                     "chunk = min(32, nt)",
                     "if tid < nt // chunk:",
                     "    x = 0",
                     "    for q in range(tid * chunk, tid * chunk + chunk):",
                     "        x += sums[q]",
                     "    chunks[tid] = x",
                     "cuda.syncthreads()",
                     "if tid == 0:",
                     "    own = 0",
                     "    for q in range(nt // chunk):",
                     "        x = chunks[q]",
                     "        chunks[q] = own",
                     "        own += x"]
            if part == "totals":
                body += ["    state[slot * (tiles + 1) + t + 1] = own"]
            elif part == "tiles":
                body += ["    info[1] = state[slot * (tiles + 1) + t]"]
            else:
                body += ["    base = 3 + slot * tiles",
                         "    if t == 0:",
                         f"        cuda.atomic.exch(state, base, tag | {incl} | own)",
                         "        info[1] = 0",
                         "    else:",
                         f"        cuda.atomic.exch(state, base + t, tag | {agg} | own)",
                         "        ex = 0",
                         "        j = t - 1",
                         "        while j >= 0:",
                         "            w = cuda.atomic.add(state, base + j, 0)",
                         f"            f = (w >> {STATUS_BITS}) & 3",
                         f"            if (w >> {STATUS_BITS + 2}) == epoch and f != 0:",
                         f"                ex += w & {mask}",
                         "                j = -1 if f == 2 else j - 1",
                         f"        cuda.atomic.exch(state, base + t, tag | {incl} | (ex + own))",
                         "        info[1] = ex"]
            if part != "totals":
                body += _tile_write_lines(p, sig, lengths, division, unroll)
        body, constants = hoist_slot_constants(p, body)
        out.append(f"        {'if' if s == 0 else 'elif'} sig == {s}:")
        out += [f"            {line}" for line in constants + body]
    out += ["        cuda.syncthreads()"]
    if part == "single":
        out += ["    if tid == 0:",
                "        if cuda.atomic.add(state, 1, 1) == cuda.gridDim.x - 1:",
                "            state[0] = 0",
                "            state[1] = 0",
                f"            state[2] = (epoch + 1) % {EPOCHS}"]
    return "\n".join(out) + "\n"


def _tile_write_lines(p: str, sig: tuple, lengths: list[str], division: str,
                      unroll: int) -> list[str]:
    """A tiled kernel's last part for one list slot (tiled_source): each thread's rows
    scanned from its chunk's prefix, then the tile's offsets and values written from
    `prefix`, the output elements of the tiles before it (info[1])."""
    K = len(sig[3])
    body = ["cuda.syncthreads()",
            "run = chunks[tid // chunk]",
            "for q in range(tid - tid % chunk, tid):",
            "    run += sums[q]",
            "for k in range(items):",
            "    x = lens[tid * items + k]",
            "    lens[tid * items + k] = run",
            "    run += x",
            "cuda.syncthreads()",
            "prefix = info[1]",
            "if t == 0 and tid == 0:",
            "    offs[desc[dst, 1]] = 0"]
    lanes = sig[6]
    if lanes > 1:
        body += [f"lane = tid % {lanes}",
                 f"for i in range(tid // {lanes}, tile_rows, nt // {lanes}):"]
    else:
        body += ["for k in range(items):",
                 "    i = k * nt + tid"]
    body += ["    r = row0 + i",
             "    if r < rows:"]
    body += ["        " + line for line in lengths]
    body += ["        pos = prefix + lens[i]"]
    store = f"offs[desc[dst, 1] + r + 1] = pos + {p}L{K}"
    body += (["        if lane == 0:", f"            {store}"] if lanes > 1
             else [f"        {store}"])
    body += [f"        {p}ost = desc[dst, 0] + pos"]
    body += ["        " + line for line in element_lines(p, sig, division, lanes, unroll)]
    return body
