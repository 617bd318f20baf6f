"""torch.utils.benchmark.utils: the task spec and measurement, the timer, the comparison."""
