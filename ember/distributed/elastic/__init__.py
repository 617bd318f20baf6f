"""torchelastic on ember: the agent behind ``python -m ember.distributed.run`` (torchrun),
rendezvous backends, worker processes and their error reports."""
