# The smallest protected PyTorch trainer: a model, Adam, a snapshot every 10 steps.
import torch
import ftrt

ctx = ftrt.init()                     # on the trainers; each node's SMP is ft-smp
ftrt.init_process_group(ctx.comm)     # gloo over exactly the trainers
torch.manual_seed(0)
model = torch.nn.Linear(64, 64)
opt = torch.optim.Adam(model.parameters())
ctx.register_model(model)             # parameters and buffers, in place
ctx.register_optimizer(opt)           # any torch optimizer's state
ctx.register_rng()                    # torch, numpy and random generators
counters = ctx.counters(step=0)       # int or float counters, restored too
try:
    print("resumed from step", ctx.restore())
except ftrt.NoSnapshot:
    print("fresh start")
while counters.step < 100:
    loss = model(torch.randn(8, 64)).square().mean()
    loss.backward()                   # (a real job all-reduces the gradients)
    with ctx.update(counters.step + 1, snapshot=(counters.step + 1) % 10 == 0):
        opt.step()                    # fence() before, snapshot(step) after
        opt.zero_grad()
        counters.step += 1
print("done at step", counters.step)
torch.distributed.destroy_process_group()
ctx.finalize()
