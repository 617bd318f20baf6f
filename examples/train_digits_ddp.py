"""The digits CNN of train_digits.py trained with DistributedDataParallel on several
processes: each reads its share of the data (DistributedSampler), gradients are averaged
by the bucketed allreduce during backward, rank 0 saves the checkpoint.

    python -m ember.distributed.run --standalone --nproc-per-node=2 \
        examples/train_digits_ddp.py [--epochs N] [--batch-size B] [--out digits_ddp.pt]

(or `bash scripts/demo.sh --ddp`). Written against the torch API: with real torch,
`torchrun --standalone --nproc-per-node=2 examples/train_digits_ddp.py` runs the same
after changing the imports.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember as torch  # noqa: E402
import ember.distributed as dist  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from ember.utils.data import DataLoader  # noqa: E402
from ember.utils.data.distributed import DistributedSampler  # noqa: E402
from train_digits import DigitsCNN, load_digits_split  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=32, help="per process")
    p.add_argument("--out", default="digits_ddp.pt")
    args = p.parse_args()

    dist.init_process_group("gloo")          # env:// from the launcher
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)                     # DDP broadcasts rank 0's weights anyway
    train, test = load_digits_split()
    sampler = DistributedSampler(train, shuffle=True, seed=0)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    model = DDP(DigitsCNN())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)

    start = time.perf_counter()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)             # a different shuffle each epoch
        model.train()
        total = torch.zeros(2)               # summed loss, batches
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()                  # gradients averaged across processes here
            opt.step()
            total += torch.stack([loss.detach(), torch.tensor(1.0)])
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch + 1}: mean loss {total[0].item() / total[1].item():.4f} "
                  f"over {world} processes", flush=True)

    # every rank scores its share of the test set; the counts are summed
    model.eval()
    shard = DistributedSampler(test, shuffle=False)
    right = torch.zeros(2)
    with torch.no_grad():
        for x, y in DataLoader(test, batch_size=128, sampler=shard):
            right += torch.tensor([(model(x).argmax(1) == y).sum().item(), len(y)], dtype=torch.float32)
    dist.all_reduce(right)
    if rank == 0:
        print(f"test accuracy {right[0].item() / right[1].item():.3f} "
              f"({world} processes, {time.perf_counter() - start:.1f} s)")
        torch.save(model.module.state_dict(), args.out)
        print(f"saved {args.out}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
