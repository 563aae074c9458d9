"""A trainer that imports torch first and calls ftrt.init() late, as a
script may when each node's SMP is a process of ft-smp (ft-launch's default
for a Python PROGRAM): tests/python/run.sh runs it under ft-launch on two
virtual nodes.  Before init() it leaves a file named by its pid in OUT (the
code before init() runs on trainers only); after, it checks that its node's
SMP is ft-smp's process and has no torch in it, then snapshots and restores
a tensor and writes what a user would check to OUT/rank.R (a file of its
own: the lines of two trainers are not interleaved), with the variable
FTRT_TEST_MARK that the launch may export (mpirun's -x) and how a process
it started before init(), importing ftrt, ended.

    mpmd_job.py OUT FT-STATUS [exit-before-init | no-finalize]

With exit-before-init, trainer 1 initialises MPI and ends with sys.exit(0)
instead of calling ftrt.init(), as a script's --help might: its node's SMP
would wait for it, so the ftrt package ends the job.  With no-finalize,
every trainer calls ftrt.init() and ends without ctx.finalize(): the SMPs
would serve them for ever, so the job is ended too.
"""
import json
import os
import subprocess
import sys

import torch  # before ftrt: nothing of this script runs in an SMP

out, ft_status = sys.argv[1], sys.argv[2]
open(os.path.join(out, "before.%d" % os.getpid()), "w").close()

import ftrt  # noqa: E402

if sys.argv[3:] == ["exit-before-init"]:
    from mpi4py import MPI
    if MPI.COMM_WORLD.Get_rank() == 3:  # trainer 1: rank 3 of 2 x (SMP, trainer)
        sys.exit(0)
if sys.argv[3:] == ["no-finalize"]:
    ctx = ftrt.init()
    sys.exit(0)

# A process the trainer starts (a tool, a data loader's worker) imports
# ftrt too and ends: it is no trainer of the job, and ends nothing.
child = subprocess.run([sys.executable, "-c", "import ftrt"],
                       capture_output=True, text=True, timeout=60)

with ftrt.init() as ctx:
    rank = ctx.comm.Get_rank()
    # one trainer a node: node index = trainer rank
    st = json.loads(subprocess.run(
        [ft_status, "--json", "--vnode", str(rank)], check=True,
        capture_output=True, text=True).stdout)
    pid = st["smp"]["pid"]
    exe = os.path.basename(os.readlink("/proc/%d/exe" % pid))
    with open("/proc/%d/maps" % pid) as f:
        torch_in_smp = "torch" in f.read()
    want = torch.arange(4096, dtype=torch.float64) * (rank + 1)
    t = torch.zeros_like(want)  # what a resume must fill
    ctx.register("t", t, ftrt.KIND_PARAM)
    with open(os.path.join(out, "rank.%d" % rank), "w") as report:
        report.write("rank %d: smp %s, torch %s, FTRT_TEST_MARK %s\n" % (
            rank, exe, "loaded" if torch_in_smp else "not loaded",
            os.environ.get("FTRT_TEST_MARK", "unset")))
        report.write("rank %d: a child importing ftrt: exit %d%s\n" % (
            rank, child.returncode, child.stderr.strip() and
            ", stderr " + child.stderr.strip()))
        try:
            step = ctx.restore()
            how = "resumed from step"
        except ftrt.NoSnapshot:
            t.copy_(want)
            ctx.snapshot(1)
            t.zero_()
            step = ctx.restore()
            how = "restored step"
        report.write("rank %d: %s %d, bytes %s\n" % (
            rank, how, step, "equal" if torch.equal(t, want) else "DIFFER"))
