/*
 * The trainer side of the API: registration, capture into the node store,
 * fences and restore.
 *
 * A trainer writes its own buffers straight into its region of a slot file
 * that it maps (one copy, no staging), then tells the SMP through the control
 * segment.  Version V always goes to slot V % 2, and the SMP prepares that
 * slot only once V-1 is committed, so the slot holding the latest committed
 * version is never written.  In sync mode the copy runs inside ft_snapshot.
 * In lazy mode the RNG and OTHER buffers (small, and changed by the very
 * next step) are copied inside ft_snapshot too, the rest on a helper thread
 * that ft_fence joins.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/trainer.h"

#include "base/agree.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/pages.h"
#include "runtime/disk.h"
#include "runtime/reslice.h"
#include "runtime/topo.h"
#include "snapshot/hold.h"

#define ALIGN 64u

static uint64_t align_up(uint64_t x) { return (x + ALIGN - 1) / ALIGN * ALIGN; }

static ft__ctl_rank_t *me(ft_ctx_t *c) { return &c->ctl->rank[c->local_idx]; }

int ft__trainer_attach(ft_ctx_t *c, uint64_t launch) {
  char msg[512];
  /* The store the SMP made, checked as the SMP checked it (store.h); every
   * file of it is then opened through this descriptor. */
  int rc = ft__store_open_dir(c->cfg.store_root, c->dir.path, 0, &c->dir, msg,
                              sizeof(msg));
  if (rc == FT_OK)
    rc = ft__ctl_attach(&c->dir, &c->ctl, msg, sizeof(msg));
  /* A segment of another launch (left in a /dev/shm this process sees and
   * the SMP does not): its layout and versions are not this node's. */
  if (rc == FT_OK && c->ctl->launch != launch) {
    rc = ft__msgf(FT_ECONFIG, msg, sizeof(msg),
                  "the control segment in %s is another launch's, not this "
                  "node's SMP's: this process does not see the SMP's store "
                  "(every rank of a host must see the same FT_STORE_ROOT, "
                  "%s; a container with a /dev/shm of its own?)",
                  c->dir.path, c->cfg.store_root);
    ft__ctl_detach(c->ctl);
    c->ctl = NULL;
  }
  if (rc) {
    FT_LOGE(&c->log, "%s", msg);
    return rc;
  }
  int app_rank;
  MPI_Comm_rank(c->app_comm, &app_rank);
  me(c)->pid = (uint32_t)getpid();
  me(c)->app_rank = (uint32_t)app_rank;
  ft__topo_affinity(me(c)->cpuset, sizeof(me(c)->cpuset));
  for (int i = 0; i < FT_NSLOTS; i++)
    c->slot[i].fd = -1;
  ft__ctl_notify(c->ctl);
  return FT_OK;
}

void ft__trainer_release(ft_ctx_t *c) {
  for (int i = 0; i < FT_NSLOTS; i++) {
    if (c->cuda_pinned[i] == 1)
      ft__cuda_unregister_host(c->cuda, c->slot[i].map);
    if (c->slot[i].map)
      ft__slot_close(&c->slot[i]);
  }
  ft__cuda_destroy(c->cuda);
  c->cuda = NULL;
  if (c->ctl) {
    ft__store32(&me(c)->finalized, 1);
    ft__ctl_notify(c->ctl);
  }
}

/* ---- registration ---- */

static int check_memory(ft_ctx_t *c, const ft_buf_opts_t *o) {
  if (o->memory == FT_MEM_HOST)
    return FT_OK;
  if (o->memory != FT_MEM_CUDA)
    return FT_EINVAL;
  if (c->cuda)
    return FT_OK;
  char msg[256] = "";
  int rc = ft__cuda_create(&c->cuda, msg, sizeof(msg));
  if (rc)
    FT_LOGE(&c->log, "ft_register: device buffer refused: %s", msg);
  return rc;
}

/* Room for one more registration: the table has no fixed size (a model
 * registers a buffer per tensor and its optimiser's state). */
static int grow_regs(ft_ctx_t *c) {
  if (c->nregs < c->cap_regs)
    return FT_OK;
  if (c->cap_regs > INT_MAX / 2)
    return FT_ERANGE;
  int cap = c->cap_regs ? 2 * c->cap_regs : 64;
  ft__reg_t *p = ft__realloc(c->regs, (size_t)cap * sizeof(*p));
  if (!p)
    return FT_ENOMEM;
  c->regs = p;
  c->cap_regs = cap;
  return FT_OK;
}

int ft_register(ft_ctx_t *c, const char *name, void *ptr, size_t bytes,
                const ft_buf_opts_t *opts) {
  if (!c || !name || (!ptr && bytes) || strlen(name) >= FT_NAME_MAX || !*name)
    return FT_EINVAL;
  if (c->frozen)
    return FT_ESTATE;
  for (int i = 0; i < c->nregs; i++)
    if (strcmp(c->regs[i].name, name) == 0)
      return FT_EINVAL;
  ft_buf_opts_t o = {0};
  o.memory = (ft_mem_kind_t)c->cfg.default_memory;
  if (opts)
    o = *opts;
  if (o.global_bytes && (o.global_offset > o.global_bytes ||
                         bytes > o.global_bytes - o.global_offset))
    return FT_ERANGE;
  int rc = check_memory(c, &o);
  if (rc == FT_OK)
    rc = grow_regs(c);
  if (rc)
    return rc;
  ft__reg_t *r = &c->regs[c->nregs++];
  snprintf(r->name, sizeof(r->name), "%s", name);
  r->ptr = ptr;
  r->bytes = bytes;
  r->opts = o;
  r->offset = c->region_bytes;
  c->region_bytes = align_up(c->region_bytes + bytes);
  return FT_OK;
}

/* ---- layout: hand the table to the SMP, wait for the slots ---- */

/* The buffer table goes to its file (ctl.h), then registered tells the
 * SMP it is there -- or, where it could not be written, why not. */
static void publish(ft_ctx_t *c) {
  ft__ctl_rank_t *r = me(c);
  ft__buf_rec_t *bufs = ft__calloc((size_t)c->nregs + 1, sizeof(*bufs));
  char msg[512] = "";
  int rc = bufs ? FT_OK
                : ft__msgf(FT_ENOMEM, msg, sizeof(msg),
                           "out of memory for a table of %d buffers", c->nregs);
  for (int i = 0; bufs && i < c->nregs; i++) {
    ft__buf_rec_t *b = &bufs[i];
    snprintf(b->name, sizeof(b->name), "%s", c->regs[i].name);
    b->bytes = c->regs[i].bytes;
    b->offset = c->regs[i].offset;
    b->global_offset = c->regs[i].opts.global_offset;
    b->global_bytes = c->regs[i].opts.global_bytes;
    b->kind = c->regs[i].opts.kind;
    b->memory = c->regs[i].opts.memory;
  }
  r->nbufs = (uint32_t)c->nregs;
  r->region_bytes = c->region_bytes;
  if (rc == FT_OK)
    rc = ft__ctl_put_bufs(c->ctl, &c->dir, (uint32_t)c->local_idx, bufs,
                          r->nbufs, msg, sizeof(msg));
  ft__free(bufs);
  if (rc)
    FT_LOGE(&c->log, "cannot hand the buffer table to the SMP: %s", msg);
  r->reg_status = rc;
  ft__store32(&r->registered, 1);
  ft__ctl_notify(c->ctl);
}

/* Wait until cond(c) holds, sleeping on the futex, however long that takes
 * while the SMP shows signs of life (its heartbeat count moves, or it is
 * held: hold.h); FT_ETIMEDOUT once it has shown none for the configured
 * timeout, FT_EPEER if the SMP reported a fatal error. */
static int wait_for(ft_ctx_t *c, int (*cond)(ft_ctx_t *), const char *what) {
  double deadline = ft__now() + c->cfg.timeout_s;
  uint64_t beat = ft__load64(&c->ctl->smp_beat);
  for (;;) {
    uint32_t seq = ft__ctl_seq(c->ctl);
    if (cond(c))
      return FT_OK;
    int smp = (int)__atomic_load_n(&c->ctl->smp_status, __ATOMIC_ACQUIRE);
    if (smp != FT_OK) {
      FT_LOGE(&c->log, "%s: the SMP stopped: %s", what, c->ctl->msg);
      return smp;
    }
    uint64_t now_beat = ft__load64(&c->ctl->smp_beat);
    if (now_beat != beat || ft__hold_active(c->ctl)) {
      beat = now_beat;
      deadline = ft__now() + c->cfg.timeout_s;
    }
    double left = deadline - ft__now();
    if (left <= 0) {
      FT_LOGE(&c->log,
              "%s: no sign of life from the SMP of %s for %.0f s (FT_TIMEOUT)",
              what, c->host, c->cfg.timeout_s);
      return FT_ETIMEDOUT;
    }
    ft__ctl_wait(c->ctl, seq, left < 1.0 ? left : 1.0);
  }
}

static int layout_ready(ft_ctx_t *c) {
  return ft__load32(&c->ctl->layout_ready) != 0;
}

/* Map slot i at its current size (the SMP may have resized it). */
static int map_slot(ft_ctx_t *c, int i) {
  ft__slot_t *s = &c->slot[i];
  if (s->map && s->map_bytes == s->hdr->seg_bytes)
    return FT_OK;
  if (c->cuda_pinned[i] == 1)
    ft__cuda_unregister_host(c->cuda, s->map);
  c->cuda_pinned[i] = 0;
  c->region_faulted[i] = 0;
  if (s->map)
    ft__slot_close(s);
  char msg[512];
  int rc = ft__slot_open(s, &c->dir, i, c->cfg.job, msg, sizeof(msg));
  if (rc)
    FT_LOGE(&c->log, "%s", msg);
  return rc;
}

/* Once per run; a failed layout stays failed (its status is kept). */
static int ensure_layout(ft_ctx_t *c) {
  if (c->published)
    return c->layout_status;
  c->frozen = 1;
  publish(c);
  int rc = wait_for(c, layout_ready, "layout");
  if (rc == FT_OK && (rc = c->ctl->layout_status) != FT_OK)
    FT_LOGE(&c->log, "%s", c->ctl->msg);
  if (rc == FT_OK)
    c->version = ft__load64(&c->ctl->committed_version);
  c->published = 1;
  c->layout_status = rc;
  return rc;
}

/* ---- capture ---- */

/* Pin slot i's mapping so that device copies go by DMA.  CUDA refuses to
 * pin some mappings (a file on a disk file system: Linux 6.5 and later
 * refuse long-term pins of writable shared file mappings that are not
 * tmpfs); the copies then go through CUDA's staging buffers, the same bytes
 * more slowly, and the first refusal says so. */
static void pin_slot(ft_ctx_t *c, int i) {
  if (!c->cuda || c->cuda_pinned[i])
    return;
  int rc =
      ft__cuda_register_host(c->cuda, c->slot[i].map, c->slot[i].map_bytes);
  c->cuda_pinned[i] = rc == FT_OK ? 1 : -1;
  if (rc && !c->cuda_pin_warned++)
    FT_LOGW(&c->log,
            "ft_snapshot: CUDA cannot pin the store (slot %d, %zu bytes, "
            "under %s): %s; device copies go through CUDA's staging buffers, "
            "slower (a store on tmpfs, such as /dev/shm, can be pinned)",
            i, c->slot[i].map_bytes, c->cfg.store_root,
            ft__cuda_last_error(c->cuda));
}

/* Which buffers a pass copies.  Lazy mode copies the small state the next
 * step changes at once (RNG and OTHER kinds: generators, counters) inside
 * ft_snapshot, and only the rest on the copier thread (ftrt.h). */
enum { COPY_ALL, COPY_EAGER, COPY_LAZY };

static int in_pass(const ft__reg_t *r, int pass) {
  int eager = r->opts.kind == FT_KIND_RNG || r->opts.kind == FT_KIND_OTHER;
  return pass == COPY_ALL || eager == (pass == COPY_EAGER);
}

static int copy_out(ft_ctx_t *c, int pass) {
  ft__slot_t *s = &c->slot[c->copy_slot];
  uint8_t *region = s->map + s->hdr->rank_off[c->local_idx];
  int rc = FT_OK;
  /* The first copy into a mapping would take a fault a page: tens of ms for
   * a few tens of MiB where faults are dear (a VM).  In one call instead,
   * on the thread that copies (lazy: off the training thread). */
  if (pass != COPY_EAGER && !c->region_faulted[c->copy_slot]) {
    ft__slot_prefault_range(s, s->hdr->rank_off[c->local_idx],
                            s->hdr->rank_bytes[c->local_idx]);
    c->region_faulted[c->copy_slot] = 1;
  }
  for (int i = 0; i < c->nregs && rc == FT_OK; i++) {
    ft__reg_t *r = &c->regs[i];
    if (!in_pass(r, pass))
      continue;
    if (i == c->nregs / 2) {
      ft__log_hold_at(&c->log, c->ctl, c->hold_gen, FT_HOLD_SNAPSHOT,
                      me(c)->step);
      FT_FAULT_POINT(c, "copy");
    }
    if (r->opts.memory != FT_MEM_CUDA)
      memcpy(region + r->offset, r->ptr, r->bytes);
    else if ((rc = ft__cuda_copy_d2h_async(c->cuda, region + r->offset, r->ptr,
                                           r->bytes, r->opts.cuda_stream)))
      FT_LOGE(&c->log, "ft_snapshot: device buffer '%s': %s", r->name,
              ft__cuda_last_error(c->cuda));
  }
  if (c->cuda && rc == FT_OK && (rc = ft__cuda_wait(c->cuda)))
    FT_LOGE(&c->log, "ft_snapshot: device copies: %s",
            ft__cuda_last_error(c->cuda));
  return rc;
}

static void copy_done(ft_ctx_t *c, int rc) {
  ft__ctl_rank_t *r = me(c);
  __atomic_store_n(&r->written_status, rc, __ATOMIC_RELEASE);
  ft__store64(&r->written_version, c->copy_version);
  ft__ctl_notify(c->ctl);
}

static void copy_lazy(ft_ctx_t *c) {
  c->copy_status = copy_out(c, COPY_LAZY);
  copy_done(c, c->copy_status);
}

/* The copier thread: ftrt's own, so it may be moved and given a device. */
static void *copier(void *arg) {
  ft_ctx_t *c = arg;
  /* The SMP's core is idle while trainers copy; the trainer's is not. */
  if (c->ctl->smp_cpus[0])
    ft__topo_thread_to(c->ctl->smp_cpus);
  ft__cuda_bind_thread(c->cuda);
  copy_lazy(c);
  return NULL;
}

static int prev_committed(ft_ctx_t *c) {
  return ft__load64(&c->ctl->committed_version) >= c->version;
}

static int slot_prepared(ft_ctx_t *c) {
  return ft__load64(&c->ctl->prepared_version) >= c->version + 1;
}

/* May version+1 start?  Block waits for the previous commit; skip asks
 * once.  Either way every trainer must make the same choice: the caller
 * agrees on the result. */
static int may_start(ft_ctx_t *c) {
  if (c->cfg.policy == FT_POLICY_BLOCK)
    return wait_for(c, prev_committed, "ft_snapshot");
  return prev_committed(c) ? FT_OK : FT_EBUSY;
}

/* Wait for the slot of version+1 and map it; copies nothing yet. */
static int prepare_copy(ft_ctx_t *c) {
  int rc = wait_for(c, slot_prepared, "ft_snapshot");
  if (rc)
    return rc;
  c->copy_slot = (int)c->ctl->prepared_slot;
  c->copy_version = c->version + 1;
  if ((rc = map_slot(c, c->copy_slot)))
    return rc;
  pin_slot(c, c->copy_slot);
  if (c->slot[c->copy_slot].hdr->version != c->copy_version) {
    FT_LOGE(&c->log, "%s: prepared for version %llu, expected %llu",
            c->slot[c->copy_slot].path,
            (unsigned long long)c->slot[c->copy_slot].hdr->version,
            (unsigned long long)c->copy_version);
    return FT_ESTATE;
  }
  return FT_OK;
}

/* Start the copy once every trainer is ready: sync copies here and agrees
 * again before telling the SMP; lazy hands the copy to a thread. */
static int run_copy(ft_ctx_t *c) {
  if (c->local_idx == 0)
    ft__store32(&c->ctl->phase, FT_PHASE_SNAPSHOT);
  if (c->cfg.capture == FT_CAPTURE_SYNC) {
    int rc = ft__agree(c->app_comm, copy_out(c, COPY_ALL));
    if (rc)
      return rc; /* nobody announced it: every rank retries this version */
    c->version++;
    /* The SMP is woken only now, so that the trainers' agreement does not
     * wait behind the SMP's CRC and encode on shared cores. */
    copy_done(c, FT_OK);
    return FT_OK;
  }
  c->version++;
  /* A failed eager copy is reported by ft_fence, as a lazy one would be. */
  if ((c->copy_status = copy_out(c, COPY_EAGER)) != FT_OK) {
    copy_done(c, c->copy_status);
    return FT_OK;
  }
  if (pthread_create(&c->copier, NULL, copier, c) == 0)
    c->copying = 1;
  else /* no thread: copy here rather than fail a version others started,
        * on the trainer's thread as it is (its CPUs, its device) */
    copy_lazy(c);
  return FT_OK;
}

/* rc: how the previous lazy copy ended (ft_fence); every rank agrees. */
static int snapshot(ft_ctx_t *c, uint64_t step, int rc) {
  if (rc == FT_OK)
    rc = ensure_layout(c);
  if (rc == FT_OK)
    rc = may_start(c);
  if ((rc = ft__agree(c->app_comm, rc))) {
    if (rc == FT_EBUSY && c->local_idx == 0)
      __atomic_add_fetch(&c->ctl->stats.skipped, 1, __ATOMIC_RELAXED);
    return rc;
  }
  /* The slot was prepared before the step was known: the SMP copies it into
   * the slot header from here once every trainer has written. */
  ft__store64(&me(c)->step, step);
  if ((rc = ft__agree(c->app_comm, prepare_copy(c))))
    return rc; /* every rank retries the same version next time */
  return run_copy(c);
}

/* The trainers' hold points: mid-copy, and after the commit (hold.h). */
#define TRAINER_HOLDS ((1u << FT_HOLD_STEP) | (1u << FT_HOLD_SNAPSHOT))

/* FT_HOLD=step=N: every trainer stops once its snapshot is committed. */
static int hold_after_commit(ft_ctx_t *c, uint64_t step) {
  if (!c->hold_gen || c->ctl->hold.point != FT_HOLD_STEP)
    return FT_OK;
  int rc = ft_wait_committed(c, NULL);
  if (rc == FT_OK)
    ft__log_hold_at(&c->log, c->ctl, c->hold_gen, FT_HOLD_STEP, step);
  return rc;
}

/* Under ft-launch, rank 0 tells it when the state was back (and when the
 * first step after it ended: the next ft_snapshot), base/times.h. */
static void restored(ft_ctx_t *c) {
  int rank;
  c->times.restored_ms = ft__times_now_ms();
  c->times.step_said = 0;
  MPI_Comm_rank(c->app_comm, &rank);
  if (rank == 0)
    ft__times_say("job",
                  "mpi_ms=%" PRId64 " init_ms=%" PRId64 " restored_ms=%" PRId64,
                  c->times.mpi_ms, c->times.init_ms, c->times.restored_ms);
}

static void first_step_done(ft_ctx_t *c) {
  int rank;
  c->times.step_said = 1;
  MPI_Comm_rank(c->app_comm, &rank);
  if (rank == 0)
    ft__times_say("step", "step_ms=%" PRId64, ft__times_now_ms());
}

int ft_snapshot(ft_ctx_t *c, uint64_t step) {
  if (!c)
    return FT_EINVAL;
  if (c->times.restored_ms && !c->times.step_said)
    first_step_done(c);
  /* The previous lazy copy reads hold_gen: it must be over before the gate
   * decides for this snapshot. */
  int rc = ft_fence(c);
  c->hold_gen = c->ctl && rc == FT_OK ? ft__hold_gate(c->ctl, &me(c)->gate_step,
                                                      step, TRAINER_HOLDS)
                                      : 0;
  rc = snapshot(c, step, rc);
  if (rc == FT_OK)
    rc = hold_after_commit(c, step);
  return rc;
}

int ft_fence(ft_ctx_t *c) {
  if (!c)
    return FT_EINVAL;
  if (c->copying) {
    pthread_join(c->copier, NULL);
    c->copying = 0;
  }
  /* How the last lazy capture ended (eager part, thread, or the inline
   * fallback), reported once. */
  int rc = c->copy_status;
  c->copy_status = FT_OK;
  return rc;
}

static int is_committed(ft_ctx_t *c) {
  return ft__load64(&c->ctl->committed_version) >= c->version;
}

int ft_wait_committed(ft_ctx_t *c, uint64_t *version) {
  if (!c)
    return FT_EINVAL;
  int rc = ft_fence(c);
  if (rc == FT_OK && c->published)
    rc = wait_for(c, is_committed, "ft_wait_committed");
  if (rc == FT_OK && version)
    *version = ft__load64(&c->ctl->committed_version);
  return rc;
}

/* ---- restore ---- */

static int verify_region(ft_ctx_t *c, ft__slot_t *s) {
  char msg[512];
  uint64_t off = s->hdr->rank_off[c->local_idx];
  if (s->hdr->rank_bytes[c->local_idx] != c->region_bytes) {
    FT_LOGE(&c->log, "%s: rank %d holds %llu bytes, this run registered %llu",
            s->path, c->local_idx,
            (unsigned long long)s->hdr->rank_bytes[c->local_idx],
            (unsigned long long)c->region_bytes);
    return FT_EMISMATCH;
  }
  int rc = ft__slot_verify_range(s, off, c->region_bytes, msg, sizeof(msg));
  if (rc)
    FT_LOGE(&c->log, "ft_restore: %s", msg);
  return rc;
}

static int restore_state(ft_ctx_t *c, uint64_t *step) {
  int rc = ft_fence(c);
  if (rc == FT_OK)
    rc = ensure_layout(c);
  /* After snapshots of this run, the newest one: wait until it is
   * committed everywhere (no trainer can start another, all are here). */
  int fresh = c->version > c->ctl->restore_version;
  if (rc == FT_OK && fresh)
    rc = wait_for(c, is_committed, "ft_restore");
  if ((rc = ft__agree(c->app_comm, rc)))
    return rc;
  /* Nothing in memory, a version on disk: the first restore of the run. */
  if (!fresh && c->version == 0 && c->ctl->restore_disk)
    return ft__disk_restore(c, step);
  uint64_t v = fresh ? c->version : c->ctl->restore_version;
  if (v == 0)
    return FT_ENOSNAPSHOT;
  int slot = (int)(v % FT_NSLOTS);
  rc = ft__agree(c->app_comm, map_slot(c, slot));
  if (rc == FT_OK && c->slot[slot].hdr->version != v)
    rc = FT_ESTATE;
  if (rc == FT_OK && !fresh && c->ctl->restore_reslice) {
    rc = ft__reslice_restore(c, &c->slot[slot]);
    if (rc == FT_OK && step)
      *step = c->slot[slot].hdr->step;
    return rc;
  }
  if (rc == FT_OK)
    rc = verify_region(c, &c->slot[slot]);
  /* Nobody touches a buffer unless every rank's data verified. */
  if ((rc = ft__agree(c->app_comm, rc)))
    return rc;
  const ft__slot_t *sl = &c->slot[slot];
  rc =
      ft__agree(c->app_comm,
                ft__regs_copy_in(c, sl->map + sl->hdr->rank_off[c->local_idx]));
  if (rc == FT_OK && step)
    *step = c->slot[slot].hdr->step;
  return rc;
}

int ft_restore(ft_ctx_t *c, uint64_t *step) {
  if (!c)
    return FT_EINVAL;
  int rc = restore_state(c, step);
  if (rc == FT_OK)
    restored(c);
  return rc;
}
