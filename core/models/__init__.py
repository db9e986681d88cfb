"""Pure ``nn.Module`` definitions; training loops live in the task modules."""
