"""A small training loop annotated with nsys_diag.annotate — runs anywhere, profiles anywhere.

    python examples/train_loop.py --steps 5                  # CPU is fine; no GPU needed
    nsys-diag profile -o build/train -- python examples/train_loop.py --steps 50
    nsys-diag analyze build/train.sqlite                    # if you profiled with raw nsys

With PyTorch installed it trains a tiny MLP (on CUDA when available, so the trace has kernels);
without it, the same loop runs in NumPy. ``--data-ms`` makes the loader slow on purpose
(``--data-ms 40`` on a GPU is meant to produce an input-bound run).

With ``--profile-from-step K`` (PyTorch + CUDA) the loop calls ``torch.cuda.profiler.start()``
at step K and ``stop()`` after the last step, for
``nsys-diag profile --capture-range cudaProfilerApi -- python examples/train_loop.py …``.
"""
from __future__ import annotations

import argparse
import sys
import time

from nsys_diag.annotate import phase, steps


class SyntheticLoader:
    """Batches of random features/targets; ``data_ms`` of simulated decode work per batch.

    Has ``len()`` like a map-style DataLoader, so ``steps()`` knows where the epoch ends.
    """

    def __init__(self, n_batches: int, batch_size: int, features: int, data_ms: float, seed: int = 0):
        import numpy as np

        self.n_batches, self.batch_size, self.features = n_batches, batch_size, features
        self.data_ms = data_ms
        self.rng = np.random.default_rng(seed)
        self.true_w = self.rng.standard_normal(features)

    def __len__(self) -> int:
        return self.n_batches

    def __iter__(self):
        for _ in range(self.n_batches):
            if self.data_ms:
                time.sleep(self.data_ms / 1000.0)  # stands in for reading/decoding/augmenting
            x = self.rng.standard_normal((self.batch_size, self.features)).astype("float32")
            y = (x @ self.true_w + 0.1 * self.rng.standard_normal(self.batch_size)).astype("float32")
            yield x, y


def train_torch(torch, args) -> float:
    device = "cuda" if torch.cuda.is_available() and not args.cpu else "cpu"
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(args.features, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, 1),
    ).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    loader = SyntheticLoader(args.steps, args.batch_size, args.features, args.data_ms)
    profiling = False
    loss_value = float("nan")
    for i, (x, y) in enumerate(steps(loader)):  # train_step_<i>, with its `data` fetch inside
        if device == "cuda" and args.profile_from_step is not None and i == args.profile_from_step:
            torch.cuda.profiler.start()
            profiling = True
        with phase("data"):  # host→device copy: data work, inside the step
            x = torch.from_numpy(x).to(device, non_blocking=True)
            y = torch.from_numpy(y).to(device, non_blocking=True)
        with phase("forward"):
            loss = torch.nn.functional.mse_loss(model(x).squeeze(1), y)
        with phase("backward"):  # kernels come from the autograd thread: a start/end range
            loss.backward()
        with phase("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
        if i % args.log_every == 0 or i == args.steps - 1:
            with phase("overhead"):  # .item() syncs with the GPU: real logging overhead
                loss_value = loss.item()
                print(f"step {i:4d}  loss {loss_value:.4f}  ({device}, torch)", flush=True)
    if profiling:
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    return loss_value


def train_numpy(args) -> float:
    import numpy as np

    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((args.features, args.hidden)) * 0.1).astype("float32")
    w2 = (rng.standard_normal((args.hidden, 1)) * 0.1).astype("float32")
    loader = SyntheticLoader(args.steps, args.batch_size, args.features, args.data_ms)
    loss_value = float("nan")
    for i, (x, y) in enumerate(steps(loader)):
        with phase("forward"):
            h = np.maximum(x @ w1, 0.0)
            pred = (h @ w2)[:, 0]
            err = pred - y
            loss_value = float(np.mean(err * err))
        with phase("backward"):
            g_pred = (2.0 / len(y)) * err[:, None]
            g_w2 = h.T @ g_pred
            g_h = (g_pred @ w2.T) * (h > 0)
            g_w1 = x.T @ g_h
        with phase("optimizer"):
            w1 -= args.lr * g_w1
            w2 -= args.lr * g_w2
        if i % args.log_every == 0 or i == args.steps - 1:
            with phase("overhead"):
                print(f"step {i:4d}  loss {loss_value:.4f}  (cpu, numpy)", flush=True)
    return loss_value


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20, help="training steps (default 20)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--features", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--data-ms", type=float, default=2.0, help="simulated loader work per batch")
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--numpy", action="store_true", help="use NumPy even if PyTorch is installed")
    ap.add_argument("--cpu", action="store_true", help="PyTorch on CPU even if CUDA is available")
    ap.add_argument("--profile-from-step", type=int, metavar="K",
                    help="call torch.cuda.profiler.start() at step K (for --capture-range cudaProfilerApi)")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.log_every < 1:
        ap.error("--steps and --log-every must be >= 1")

    torch = None
    if not args.numpy:
        try:
            import torch
        except ImportError:
            torch = None
    start = time.perf_counter()
    loss = train_torch(torch, args) if torch is not None else train_numpy(args)
    elapsed = time.perf_counter() - start
    print(f"done: {args.steps} steps in {elapsed:.2f} s, final loss {loss:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
