"""Training: the Trainer and its config, run directories, checkpoints and the metrics log."""
