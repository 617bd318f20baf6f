"""``python -m ember.distributed.launch`` (deprecated ``torch.distributed.launch``):
torchrun's options plus ``--use-env``; without it each worker gets ``--local-rank=N`` as
its first argument.

It is a thin translation layer: the legacy options become ``ember.distributed.run``'s
and that runs them."""
from __future__ import annotations

import warnings

from ember.distributed.run import get_args_parser, run

__all__ = ["get_args_parser", "parse_args", "launch", "main"]

# ``run`` replaces ``${local_rank}`` in the script's arguments with each worker's rank.
_LOCAL_RANK_FLAG = "--local-rank=${local_rank}"

_DEPRECATED = ("The module torch.distributed.launch is deprecated\n"
               "and will be removed in future. Use torchrun.\n"
               "Note that --use-env is set by default in torchrun.\n"
               "If your script expects `--local-rank` argument to be set, please\n"
               "change it to read from `os.environ['LOCAL_RANK']` instead. See \n"
               "https://pytorch.org/docs/stable/distributed.html#launch-utility for \n"
               "further instructions\n")


def parse_args(args):
    """torchrun's parser, plus the legacy ``--use-env`` switch (off by default)."""
    legacy = get_args_parser()
    legacy.add_argument("--use-env", "--use_env", action="store_true",
                        help="Workers read their rank from LOCAL_RANK only; without this "
                             "flag (the legacy default) each script also receives "
                             "--local-rank=N as its first argument.")
    return legacy.parse_args(args)


def launch(args):
    """Turn legacy ``args`` into torchrun's and run them."""
    if not args.use_env:
        if args.no_python:
            raise ValueError("When using the '--no-python' flag, you must also set the "
                             "'--use-env' flag.")
        args.training_script_args = [_LOCAL_RANK_FLAG, *args.training_script_args]
    run(args)


def main(args=None):
    warnings.warn(_DEPRECATED, FutureWarning, stacklevel=2)
    launch(parse_args(args))


if __name__ == "__main__":
    main()
