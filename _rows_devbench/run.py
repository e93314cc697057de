import json, os, subprocess, sys, time
import torch, torch.nn.functional as F
from concurrent.futures import ThreadPoolExecutor
sys.path.insert(0, os.path.dirname(__file__))
from cpp_loader import CppKernel
D = os.path.dirname(os.path.abspath(__file__))
FLAGS = ["-O3", os.environ.get("MARCH", "-march=native"), "-fopenmp", "-std=c++17", "-shared", "-fPIC", "-fno-trapping-math", "-fno-math-errno", f"-I{D}"]
jobs = json.load(open(f"{D}/jobs.json"))
def build(j):
    so = f"/tmp/{j['file']}.so"
    subprocess.run(["g++", *FLAGS, f"{D}/{j['file']}", "-o", so], check=True)
    return so
with ThreadPoolExecutor(8) as ex: sos = list(ex.map(build, jobs))
torch.set_num_threads(int(os.environ.get("T", "2")))
REF = {"softmax": lambda t, a: torch.softmax(t[0], -1), "log_softmax": lambda t, a: torch.log_softmax(t[0], -1),
       "layer_norm": lambda t, a: F.layer_norm(t[0], (t[0].shape[-1],), t[1], t[2], a["eps"]),
       "rms_norm": lambda t, a: F.rms_norm(t[0], (t[0].shape[-1],), t[1], a["eps"]),
       "sum": lambda t, a: t[0].sum(-1), "mean": lambda t, a: t[0].mean(-1), "amax": lambda t, a: t[0].amax(-1),
       "cumsum": lambda t, a: torch.cumsum(t[0], -1)}
for j, so in zip(jobs, sos):
    dt = getattr(torch, j["dtype"]); op = j["op"]
    cols = 2048 if op in ("sum", "mean", "amax") else 1024
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(4096, cols, generator=g) * 2).to(dt)
    ins = [x]
    if op == "layer_norm": ins += [(torch.randn(cols, generator=g) + 1).to(dt), torch.randn(cols, generator=g).to(dt)]
    if op == "rms_norm": ins += [(torch.randn(cols, generator=g) + 1).to(dt)]
    ref = REF[op](ins, j["attrs"])
    k = CppKernel(so)
    out = torch.empty_like(ref); k(ins, [out])
    err = (out.double() - ref.double()).abs().max().item()
    fk = lambda: k(ins, [torch.empty(ref.shape, dtype=ref.dtype)])
    fe = lambda: REF[op](ins, j["attrs"])
    ks, es = [], []
    for f in (fk, fe): f(); f()
    for _ in range(40):
        s = time.perf_counter(); fk(); fk(); ks.append((time.perf_counter() - s) / 2)
        s = time.perf_counter(); fe(); fe(); es.append((time.perf_counter() - s) / 2)
    ks.sort(); es.sort()
    print(f"{op:12s} {j['dtype']:9s} {j['spec']:22s} kernel {ks[20]*1e3:7.3f} eager {es[20]*1e3:7.3f} x{es[20]/ks[20]:5.2f} maxerr {err:.2e}", flush=True)
