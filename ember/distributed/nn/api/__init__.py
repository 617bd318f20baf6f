"""``ember.distributed.nn.api``: the remote-module API."""
from ember.distributed.nn.api.remote_module import RemoteModule  # noqa: F401
