"""Pictures and tables from Prediction and Measurement files; never runs a model."""
