import json, os, resource, statistics, sys, time
sys.path.insert(0, "perf_tests")
import torch
from workloads.attention import BACKENDS, shapes
from pytest_accel.engine.devices.cpu import CpuDevice
CpuDevice(host_allocator="steady").activate()
SH = {s.name: s for s in shapes("smoke")}
def inputs(shape):
    g = torch.Generator().manual_seed(0)
    dims = ((shape.heads, shape.q_len), (shape.kv_heads, shape.kv_len), (shape.kv_heads, shape.kv_len))
    return tuple(torch.randn(shape.batch, h, n, shape.head_dim, generator=g) for h, n in dims)
def time_calls(backend, name, calls):
    shape = SH[name]; q, k, v = inputs(shape); run = BACKENDS[backend].run
    with torch.no_grad():
        for _ in range(20): run(q, k, v, shape.causal, None)
        ts = []; f = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(calls):
            t = time.perf_counter(); run(q, k, v, shape.causal, None); ts.append(time.perf_counter() - t)
        f = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f
    return ts, f / calls
OTHERS = [("sdpa-flash", n) for n in SH if "llama70b" in n or "sd3" in n] + [("sdpa-math", n) for n in SH if n != "llama70b-decode-kv384"]
mode, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    pid = os.fork()
    if pid == 0:
        if mode == "after":
            for b, name in OTHERS:
                try: time_calls(b, name, 30)
                except Exception as e: pass
        ts, f = time_calls("sdpa-math", "llama70b-decode-kv384", 300)
        q = statistics.quantiles(ts, n=10)
        thirds = [statistics.median(ts[j*100:(j+1)*100])*1e3 for j in range(3)]
        print(json.dumps({"mode": mode, "i": i, "median_ms": round(statistics.median(ts)*1e3,3), "p10": round(q[0]*1e3,3), "p90": round(q[-1]*1e3,3), "thirds": [round(x,3) for x in thirds], "faults": f}), flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
