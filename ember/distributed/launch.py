"""``python -m ember.distributed.launch`` (deprecated ``torch.distributed.launch``):
torchrun's options plus ``--use-env``; without it each worker gets ``--local-rank=N`` as
its first argument."""
from __future__ import annotations

import warnings

from ember.distributed.run import get_args_parser, run

__all__ = ["get_args_parser", "parse_args", "launch", "main"]


def parse_args(args):
    parser = get_args_parser()
    parser.add_argument(
        "--use-env", "--use_env", default=False, action="store_true",
        help="Use environment variable to pass 'local rank'. For legacy reasons, the default "
             "value is False. If set to True, the script will not pass --local-rank as "
             "argument, and will instead set LOCAL_RANK.")
    return parser.parse_args(args)


def launch(args):
    if args.no_python and not args.use_env:
        raise ValueError("When using the '--no-python' flag, you must also set the "
                         "'--use-env' flag.")
    if not args.use_env:
        args.training_script_args = ["--local-rank=${local_rank}",
                                     *args.training_script_args]
    run(args)


def main(args=None):
    warnings.warn(
        "The module torch.distributed.launch is deprecated\n"
        "and will be removed in future. Use torchrun.\n"
        "Note that --use-env is set by default in torchrun.\n"
        "If your script expects `--local-rank` argument to be set, please\n"
        "change it to read from `os.environ['LOCAL_RANK']` instead. See \n"
        "https://pytorch.org/docs/stable/distributed.html#launch-utility for \n"
        "further instructions\n",
        FutureWarning, stacklevel=2)
    launch(parse_args(args))


if __name__ == "__main__":
    main()
