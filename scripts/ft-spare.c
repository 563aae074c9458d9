/*
 * ft-spare: prepare a spare host for a recovery before it is needed.  A
 * spare that takes a lost node's place makes that node's two slots while
 * the whole job waits (recovery/rebuild.c, shape_helper); on tmpfs most of
 * that time is the kernel allocating and zeroing their pages.  ft-launch
 * runs "ft-spare prepare BYTES" on its free spares once the job has laid
 * out its slots, so that those pages are there already: the rebuild takes
 * the prepared files as its slots (ft__slot_create_from), and "ft-spare
 * remove" gives the memory back when the launch ends.  No MPI; it never
 * reads or writes a store of the job.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/pages.h"
#include "ftrt.h"
#include "runtime/config.h"
#include "scripts/storeopt.h"
#include "snapshot/store.h"

enum {
  EXIT_OK = 0,
  EXIT_ERR = 1,
  EXIT_USAGE = 2,
  EXIT_MEMBER = 3,
  EXIT_NOROOM = 4,
  EXIT_REFUSED = 5
};

/* No slot is near this: a number beyond it is a typo. */
#define MAX_BYTES (UINT64_C(1) << 50)

typedef struct tool {
  ft__config_t cfg;
  int vnode;
  char host[FT_NAME_MAX];
  char store[FT_PATH_MAX]; /* the job's store directory on this host */
  char spare[FT_PATH_MAX]; /* its prepared files (ft__spare_dir) */
} tool_t;

static void usage(FILE *f) {
  fputs(
      "usage: ft-spare [--job NAME] [--store DIR] [--vnode N]\n"
      "                prepare BYTES | show | remove\n"
      "Prepare this host as a spare of a job: the memory a recovery onto it\n"
      "would take, allocated before the recovery needs it (ft-launch does\n"
      "this on its free spares, and removes it when it ends).\n"
      "  prepare BYTES  two files of BYTES bytes (a slot of the job's) in\n"
      "                 ROOT/.spare-JOB, their pages allocated and zeroed;\n"
      "                 files already there of that size are kept.  A\n"
      "                 rebuild that makes this host a node of the job\n"
      "                 takes them as its slots instead of making new ones\n"
      "  show           one line: what is prepared here\n"
      "  remove         remove the prepared files (nothing else)\n"
      "  --job NAME   job name (default: FT_JOB, else 'ftrt')\n"
      "  --store DIR  store root (default: FT_STORE_ROOT, else /dev/shm/ftrt,\n"
      "               /dev/shm/ftrt-UID for a user other than root)\n"
      "  --vnode N    virtual node N (FT_VIRTUAL_NODE_RANKS layouts)\n"
      "Exit: 0 done, 1 error, 2 usage, 3 this host holds a store of the job\n"
      "(a node of it, not a spare): nothing made, 4 no room for the files:\n"
      "nothing left (a rebuild onto this host would fail the same way),\n"
      "5 store root refused: not this user's private directory (the message\n"
      "says which and how to fix it), nothing touched.\n",
      f);
}

static int fail(const tool_t *t, int code, const char *msg) {
  fprintf(stderr, "ft-spare: %s: %s\n", t->host, msg);
  return code;
}

/* The spare directory opened (made where create), checked as a store is. */
static int open_spare(const tool_t *t, int create, ft__dir_t *d, char *msg,
                      size_t msglen) {
  int rc =
      ft__store_open_dir(t->cfg.store_root, t->spare, create, d, msg, msglen);
  return rc == FT_ECONFIG  ? EXIT_REFUSED
         : rc == FT_ENOENT ? -1
         : rc              ? EXIT_ERR
                           : 0;
}

/* slot<idx> of d is already a prepared file of bytes bytes. */
static int ready(const ft__dir_t *d, const char *name, uint64_t bytes) {
  struct stat st;
  return fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISREG(st.st_mode) && st.st_nlink == 1 &&
         (uint64_t)st.st_size == bytes && (uint64_t)st.st_blocks * 512 >= bytes;
}

/* Every page of the file written once (zeroed by the kernel, as the first
 * write of each would): a tmpfs page that is only allocated (fallocate) is
 * zeroed at its first touch, and on a virtual machine that hands free
 * memory back to its host (virtio-balloon free page reporting) that touch
 * also makes the host back it again: done here, neither is left for the
 * rebuild (measured: 113 MiB on 2 MiB pages written 10-15 ms after this,
 * 108-251 ms for the first touch itself).  Best effort (base/pages.h). */
static void populate(int fd, uint64_t bytes) {
  if (!ft__prefault_fd_safe(fd))
    return;
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return;
  ft__prefault(p, bytes, 1);
  munmap(p, bytes);
}

/* One prepared file: written as NAME.part (sized first, so that a tmpfs
 * with huge=within_size gives it huge pages, then reserved and populated),
 * renamed to NAME once whole: a file called slotN is never half made. */
static int make_one(const tool_t *t, const ft__dir_t *d, const char *name,
                    uint64_t bytes, char *msg, size_t msglen) {
  char part[32];
  snprintf(part, sizeof(part), "%s.part", name);
  (void)unlinkat(d->fd, part, 0);
  int fd = ft__store_openat(d, part, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0)
    return ft__msgf(ft__from_errno(errno), msg, msglen, "%s/%s: open: %s",
                    t->spare, part, strerror(errno));
  int rc = FT_OK, r = -1;
  if (ftruncate(fd, (off_t)bytes) == 0)
    r = ft__store_reserve(fd, bytes, NULL, NULL);
  if (r < 0)
    rc = ft__msgf(ft__from_errno(errno), msg, msglen,
                  "%s/%s: cannot reserve %" PRIu64 " bytes: %s", t->spare, part,
                  bytes, strerror(errno));
  else if (r > 0)
    rc = ft__msgf(FT_EINVAL, msg, msglen,
                  "%s: its file system cannot reserve space (fallocate: not "
                  "supported): nothing to prepare; keep the store on tmpfs",
                  t->spare);
  else
    populate(fd, bytes);
  close(fd);
  if (rc == FT_OK && renameat(d->fd, part, d->fd, name) != 0)
    rc = ft__msgf(ft__from_errno(errno), msg, msglen, "%s/%s: rename: %s",
                  t->spare, part, strerror(errno));
  if (rc)
    (void)unlinkat(d->fd, part, 0);
  return rc;
}

static int remove_spare(const tool_t *t, char *msg, size_t msglen);

static int prepare(const tool_t *t, const char *arg) {
  char *end, msg[768] = "";
  errno = 0;
  uint64_t bytes = strtoull(arg, &end, 10);
  if (*end || !*arg || arg[0] == '-' || errno || bytes == 0 ||
      bytes > MAX_BYTES) {
    fprintf(stderr,
            "ft-spare: prepare %s: expected a size in bytes, 1 to "
            "2^50\n",
            arg);
    return EXIT_USAGE;
  }
  ft__dir_t d;
  int rc =
      ft__store_open_dir(t->cfg.store_root, t->store, 0, &d, msg, sizeof(msg));
  ft__dir_close(&d);
  if (rc == FT_OK) {
    snprintf(msg, sizeof(msg),
             "holds a store of job '%s' (%s): a node of the job, not a "
             "spare; nothing prepared",
             t->cfg.job, t->store);
    return fail(t, EXIT_MEMBER, msg);
  }
  if (rc != FT_ENOENT)
    return fail(t, rc == FT_ECONFIG ? EXIT_REFUSED : EXIT_ERR, msg);
  if ((rc = open_spare(t, 1, &d, msg, sizeof(msg))))
    return fail(t, rc, msg);
  for (int i = 0; rc == FT_OK && i < FT_NSLOTS; i++) {
    char name[16];
    snprintf(name, sizeof(name), "slot%d", i);
    if (!ready(&d, name, bytes))
      rc = make_one(t, &d, name, bytes, msg, sizeof(msg));
  }
  ft__dir_close(&d);
  if (rc == FT_OK)
    return EXIT_OK;
  /* Nothing half prepared: a spare without room says so now, and holds
   * none of the memory a job beside it may need. */
  char rmsg[512];
  (void)remove_spare(t, rmsg, sizeof(rmsg));
  if (rc == FT_ENOSPC) {
    size_t n = strlen(msg);
    snprintf(msg + n, sizeof(msg) - n,
             "; no room for %d slots of the job here: a rebuild onto this "
             "spare would fail the same way (ft-restore exit 5)",
             FT_NSLOTS);
    return fail(t, EXIT_NOROOM, msg);
  }
  return fail(t, EXIT_ERR, msg);
}

static int show(const tool_t *t) {
  char msg[512] = "";
  ft__dir_t d;
  int rc = open_spare(t, 0, &d, msg, sizeof(msg));
  if (rc < 0) {
    printf("%s: job %s: nothing prepared\n", t->host, t->cfg.job);
    return EXIT_OK;
  }
  if (rc)
    return fail(t, rc, msg);
  printf("%s: job %s:", t->host, t->cfg.job);
  int n = 0;
  for (int i = 0; i < FT_NSLOTS; i++) {
    char name[16];
    struct stat st;
    snprintf(name, sizeof(name), "slot%d", i);
    if (fstatat(d.fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode))
      printf("%s %s %lld bytes (%lld allocated)", n++ ? "," : "", name,
             (long long)st.st_size, (long long)st.st_blocks * 512);
  }
  printf("%s in %s\n", n ? "" : " nothing prepared", t->spare);
  ft__dir_close(&d);
  return EXIT_OK;
}

/* The spare directory and what is in it; nothing else. */
static int remove_spare(const tool_t *t, char *msg, size_t msglen) {
  char parent[FT_PATH_MAX];
  snprintf(parent, sizeof(parent), "%s", t->spare);
  char *slash = strrchr(parent, '/');
  *slash = '\0';
  ft__dir_t p;
  int rc = ft__store_open_dir(t->cfg.store_root, parent, 0, &p, msg, msglen);
  if (rc == FT_ENOENT)
    return EXIT_OK;
  if (rc)
    return rc == FT_ECONFIG ? EXIT_REFUSED : EXIT_ERR;
  rc = ft__store_remove_dir(p.fd, slash + 1, t->spare, msg, msglen);
  ft__dir_close(&p);
  return rc ? EXIT_ERR : EXIT_OK;
}

static int parse(int argc, char **argv, tool_t *t) {
  static const struct option opts[] = {
      FT_STOREOPT_OPTIONS, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  int o, src;
  while ((o = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
    if ((src = ft__storeopt(o, optarg, "ft-spare", &t->cfg, &t->vnode)) != 1) {
      if (src)
        return src;
      continue;
    }
    if (o == 'h') {
      usage(stdout);
      return -1;
    }
    usage(stderr);
    return EXIT_USAGE;
  }
  const char *cmd = optind < argc ? argv[optind] : "";
  int want = strcmp(cmd, "prepare") == 0                              ? 2
             : strcmp(cmd, "show") == 0 || strcmp(cmd, "remove") == 0 ? 1
                                                                      : 0;
  if (!want || argc - optind != want)
    return usage(stderr), EXIT_USAGE;
  return 0;
}

int main(int argc, char **argv) {
  tool_t t = {.vnode = -1};
  char msg[512];
  if (ft__config_load(&t.cfg, ft__config_env, NULL, msg, sizeof(msg)) != 0) {
    fprintf(stderr, "ft-spare: %s\n", msg);
    return EXIT_USAGE;
  }
  int prc = parse(argc, argv, &t);
  if (prc)
    return prc < 0 ? EXIT_OK : prc;
  gethostname(t.host, sizeof(t.host) - 1);
  if (ft__store_dir(t.cfg.store_root, t.cfg.job, t.vnode, t.store,
                    sizeof(t.store)) != FT_OK ||
      ft__spare_dir(t.store, t.spare, sizeof(t.spare)) != FT_OK) {
    fprintf(stderr, "ft-spare: %s: store path too long\n", t.cfg.store_root);
    return EXIT_USAGE;
  }
  const char *cmd = argv[optind];
  if (strcmp(cmd, "prepare") == 0)
    return prepare(&t, argv[optind + 1]);
  if (strcmp(cmd, "show") == 0)
    return show(&t);
  int rc = remove_spare(&t, msg, sizeof(msg));
  return rc ? fail(&t, rc, msg) : EXIT_OK;
}
