"""A PyTorch CPU implementation of the Siamese CBOW objective: the peer of the Numba kernel.

Written the way a PyTorch user would write it: ``nn.EmbeddingBag(mode="mean")``, cosines
through a masked ``log_softmax``, autograd and a plain ``torch.optim.SGD`` step on the
batch-mean loss, 100 examples per batch as in the paper. The loss is
``scbow.reference.loss_and_grad``'s (weight decay included). Examples are built as
``scbow.kernels.sampling.fill_example`` builds them (target, previous and next sentence of
its document, negatives from its document or, when it is too small, the corpus), with NumPy
before the clock starts: the comparison is generous to torch.

Run by ``benchmarks.speed`` as a worker in its own process (and OpenMP runtime): one JSON
request per stdin line (``{"threads": 2, "batches": 300}``), one JSON line of answer.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def build_members(targets, sent_doc, doc_offsets, negatives: int, negative_mode: str, rng):
    """Sentences of the examples of ``targets``, as ``fill_example`` chooses them.

    targets: int64 array (B,), each with at least one neighbour in its document.
    Returns ``members`` int64 (B, 3 + negatives): target, previous, next, negatives, with
    -1 where a positive does not exist, and ``n_pos`` int64 (B,).
    """
    t = np.asarray(targets, dtype=np.int64)
    sent_doc = np.asarray(sent_doc)
    doc_offsets = np.asarray(doc_offsets)
    n_sent = len(sent_doc)
    doc = sent_doc[t]
    prev_ok = (t > 0) & (sent_doc[np.maximum(t - 1, 0)] == doc)
    next_ok = (t + 1 < n_sent) & (sent_doc[np.minimum(t + 1, n_sent - 1)] == doc)
    n_pos = prev_ok.astype(np.int64) + next_ok
    if (n_pos == 0).any():
        raise ValueError("a target has no neighbour in its document")
    members = np.empty((len(t), 3 + negatives), dtype=np.int64)
    members[:, 0] = t
    members[:, 1] = np.where(prev_ok, t - 1, -1)
    members[:, 2] = np.where(next_ok, t + 1, -1)
    lo = np.zeros(len(t), dtype=np.int64)
    size = np.full(len(t), n_sent, dtype=np.int64)
    if negative_mode == "document":
        d_lo = doc_offsets[doc]
        d_size = doc_offsets[doc + 1] - d_lo
        own = d_size > 1 + n_pos
        lo[own] = d_lo[own]
        size[own] = d_size[own]
    for m in range(negatives):
        r = lo + rng.integers(0, size)
        while True:
            bad = (r == t) | (r == members[:, 1]) | (r == members[:, 2])
            if not bad.any():
                break
            r[bad] = lo[bad] + rng.integers(0, size[bad])
        members[:, 3 + m] = r
    return members, n_pos


def pack_batch(members, tokens, offsets, max_length: int = 0):
    """Token ids and bag offsets of every slot of ``members`` (missing positives: empty bags).

    Returns ``flat`` int64 (n,), ``bag_offsets`` int64 (B * K,), ``lengths`` int64 (B * K,).
    """
    slots = members.reshape(-1)
    valid = slots >= 0
    s = np.where(valid, slots, 0)
    starts = np.asarray(offsets[s])
    lengths = np.asarray(offsets[s + 1]) - starts
    if max_length > 0:
        lengths = np.minimum(lengths, max_length)
    lengths[~valid] = 0
    ends = np.cumsum(lengths)
    bag_offsets = ends - lengths
    positions = np.repeat(starts - bag_offsets, lengths) + np.arange(ends[-1] if len(ends) else 0)
    flat = np.asarray(tokens[positions], dtype=np.int64)
    return flat, bag_offsets.astype(np.int64), lengths.astype(np.int64)


def tokens_per_example(members, offsets, max_length: int = 0) -> float:
    """Mean token occurrences in all sentences of the examples (target, positives, negatives)."""
    slots = members.reshape(-1)
    slots = slots[slots >= 0]
    lengths = np.asarray(offsets[slots + 1]) - np.asarray(offsets[slots])
    if max_length > 0:
        lengths = np.minimum(lengths, max_length)
    return float(lengths.sum() / len(members))


class TorchSiameseCBOW:
    """The objective in PyTorch: EmbeddingBag means, cosine softmax, autograd, plain SGD.

    ``W`` float32 (V, d) is copied into the embedding. ``sparse`` chooses sparse
    gradients (rows of the batch only) or a dense (V, d) gradient per step.
    """

    def __init__(self, W, lr: float, weight_decay: float = 0.0, sparse: bool = True):
        import torch

        self.torch = torch
        self.bag = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(np.asarray(W, dtype=np.float32)),
                                                         freeze=False, mode="mean", sparse=sparse)
        self.sparse = sparse
        self.weight_decay = float(weight_decay)
        self.opt = torch.optim.SGD(self.bag.parameters(), lr=lr)

    @property
    def W(self):
        return self.bag.weight

    def tensors(self, members, n_pos, tokens, offsets, max_length: int = 0):
        """A batch as tensors: (flat ids, bag offsets, valid mask, positive targets)."""
        torch = self.torch
        flat, bag_offsets, _ = pack_batch(members, tokens, offsets, max_length)
        others = members[:, 1:]
        valid = others >= 0
        is_pos = np.zeros_like(valid)
        is_pos[:, :2] = valid[:, :2]
        target = is_pos / n_pos[:, None]
        return (torch.from_numpy(flat), torch.from_numpy(bag_offsets), torch.from_numpy(valid),
                torch.from_numpy(target.astype(np.float32)))

    def loss(self, batch):
        """Batch-mean loss of ``scbow.reference.loss_and_grad`` (weight decay included)."""
        torch = self.torch
        flat, bag_offsets, valid, target = batch
        B, K1 = valid.shape
        means = self.bag(flat, bag_offsets).view(B, K1 + 1, -1)
        s_i = means[:, 0]
        s_j = means[:, 1:]
        eps = 1e-8  # scbow.reference.NORM_EPS
        n_i = s_i.norm(dim=1).clamp_min(eps)
        n_j = s_j.norm(dim=2).clamp_min(eps)
        cos = torch.einsum("bkd,bd->bk", s_j, s_i) / (n_i[:, None] * n_j)
        log_p = torch.log_softmax(cos.masked_fill(~valid, float("-inf")), dim=1)
        loss = -(target * log_p.masked_fill(~valid, 0.0)).sum() / B
        if self.weight_decay:
            rows = torch.nn.functional.embedding(flat, self.bag.weight, sparse=self.sparse)
            loss = loss + 0.5 * self.weight_decay * rows.pow(2).sum() / B
        return loss

    def step(self, batch) -> float:
        self.opt.zero_grad(set_to_none=True)
        loss = self.loss(batch)
        loss.backward()
        self.opt.step()
        return float(loss.detach())


def prepare(corpus, config, n_batches: int, batch_size: int = 100, seed: int = 0):
    """``n_batches`` batches of the first epoch's targets (the order ``scbow.training.train`` uses)."""
    from scbow.training import first_epoch

    order = first_epoch(corpus, config)
    need = n_batches * batch_size
    if need > len(order):
        order = np.concatenate([order] * (need // len(order) + 1))
    rng = np.random.default_rng(seed)
    return [build_members(order[b * batch_size:(b + 1) * batch_size], corpus.sent_doc, corpus.doc_offsets,
                          config.negatives, config.negative_mode, rng) for b in range(n_batches)]


def oracle_check(W, corpus, members, n_pos, config, n: int = 3) -> dict:
    """Loss and gradient of the peer on ``n`` single examples against ``scbow.reference``.

    The speed harness reports a ratio against the peer only when this passes: a fast peer
    that computes something else is no peer.
    """
    from scbow.reference import loss_and_grad

    tokens, offsets = np.asarray(corpus.tokens), np.asarray(corpus.offsets)

    def sentence(s):
        stop = offsets[s + 1] if not config.max_length else min(offsets[s + 1], offsets[s] + config.max_length)
        return tokens[offsets[s]:stop].tolist()

    loss_err = grad_err = 0.0
    for row in range(min(n, len(members))):
        m, k = members[row], int(n_pos[row])
        model = TorchSiameseCBOW(W, lr=0.0, weight_decay=config.weight_decay)
        loss = model.loss(model.tensors(members[row:row + 1], n_pos[row:row + 1], tokens, offsets, config.max_length))
        loss.backward()
        g = model.W.grad
        g = (g.to_dense() if g.is_sparse else g).numpy().astype(np.float64)
        ids = [int(x) for x in m if x >= 0]
        ref_loss, ref_grad = loss_and_grad(np.asarray(W, np.float64), sentence(ids[0]),
                                           [sentence(i) for i in ids[1:1 + k]], [sentence(i) for i in ids[1 + k:]],
                                           weight_decay=config.weight_decay)
        loss_err = max(loss_err, abs(float(loss.detach()) - ref_loss) / max(abs(ref_loss), 1e-12))
        grad_err = max(grad_err, float(np.abs(g - ref_grad).max() / max(np.abs(ref_grad).max(), 1e-30)))
    return {"examples": min(n, len(members)), "max_loss_rel_err": loss_err, "max_grad_rel_err": grad_err,
            "passed": bool(loss_err < 1e-4 and grad_err < 1e-3)}


class Worker:
    def __init__(self, corpus, config, warmup: int, batches: int, batch_size: int):
        from scbow.training import untrained_start

        t0 = time.perf_counter()
        self.config = config
        raw = prepare(corpus, config, warmup + batches, batch_size)
        W = untrained_start(corpus, config)
        self.oracle = oracle_check(W, corpus, *raw[0], config)
        self.model = TorchSiameseCBOW(W, config.lr, config.weight_decay)
        self.batches = [self.model.tensors(m, n, corpus.tokens, corpus.offsets, config.max_length) for m, n in raw]
        self.tokens_per_example = float(np.mean([tokens_per_example(m, corpus.offsets, config.max_length)
                                                 for m, _ in raw]))
        self.warmup = warmup
        self.batch_size = batch_size
        self.prepare_seconds = time.perf_counter() - t0

    def measure(self, threads: int, batches: int) -> dict:
        torch = self.model.torch
        torch.set_num_threads(threads)
        for b in self.batches[:self.warmup]:
            self.model.step(b)
        timed = self.batches[self.warmup:self.warmup + batches]
        losses = []
        t0 = time.perf_counter()
        for b in timed:
            losses.append(self.model.step(b))
        seconds = time.perf_counter() - t0
        examples = len(timed) * self.batch_size
        return {"threads": threads, "torch_threads": torch.get_num_threads(), "batches": len(timed),
                "examples": examples, "seconds": round(seconds, 4), "examples_per_s": round(examples / seconds, 1),
                "mean_loss": round(float(np.mean(losses)), 5)}


def main(argv=None) -> None:
    from scbow.config import TrainConfig
    from scbow.training import load_corpus

    ap = argparse.ArgumentParser(prog="python -m benchmarks.torch_scbow", description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True, help="corpus file (its cache must be in --cache-dir to be fast)")
    ap.add_argument("--cache-dir", required=True)
    ap.add_argument("--dim", type=int, default=TrainConfig().dim)
    ap.add_argument("--batch-size", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=20, help="batches run before each timed run")
    ap.add_argument("--batches", type=int, default=300, help="most batches a request may time")
    args = ap.parse_args(argv)
    import torch

    config = TrainConfig(dim=args.dim, epochs=1)
    corpus = load_corpus([args.corpus], config.min_count, config.max_vocab, cache_dir=args.cache_dir)
    worker = Worker(corpus, config, args.warmup, args.batches, args.batch_size)
    hello = {"ready": True, "torch": torch.__version__, "prepare_seconds": round(worker.prepare_seconds, 3),
             "tokens_per_example": round(worker.tokens_per_example, 3), "sparse": True,
             "batch_size": args.batch_size, "warmup_batches": args.warmup, "oracle_check": worker.oracle,
             "torch_config": torch.__config__.parallel_info().splitlines()[:6]}
    print(json.dumps(hello), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        if req.get("quit"):
            break
        res = worker.measure(int(req["threads"]), min(int(req.get("batches", args.batches)), args.batches))
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
