"""Helpers of the elastic launcher: ports, endpoints, stores, the ``PET_*`` argparse actions."""
