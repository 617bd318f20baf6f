"""``torch.distributed`` on MPI (mpi4py): process groups, collectives, stores, DDP support."""
