/*
 * ft-spare: prepare a spare host for a recovery before it is needed.  A
 * spare that takes a lost node's place makes that node's two slots while
 * the whole job waits (recovery/prepare.c, shape_helper); on tmpfs most of
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
#include <poll.h>
#include <signal.h>
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
/* "ft-spare remove" asks a preparation under way to stop with this file. */
#define STOP_NAME "stop"
/* How long a preparation or a removal waits for the other's lock (each
 * stops within a piece once asked). */
#define LOCK_WAIT_S 600.0
/* How long --until-eof waits for the launch's first byte. */
#define UNTIL_EOF_WAIT_MS 30000

typedef struct tool {
  ft__config_t cfg;
  int vnode;
  int until_eof; /* --until-eof: stop once standard input ends */
  char host[FT_NAME_MAX];
  char store[FT_PATH_MAX]; /* the job's store directory on this host */
  char spare[FT_PATH_MAX]; /* its prepared files (ft__spare_dir) */
} tool_t;

static void usage(FILE *f) {
  fputs("usage: ft-spare [--job NAME] [--store DIR] [--vnode N] [--until-eof]\n"
        "                prepare BYTES | show | remove\n"
        "  prepare BYTES  make two files of BYTES bytes for a rebuild to take\n"
        "  show           one line: what is prepared here\n"
        "  remove         remove the prepared files\n"
        "  --job NAME     job name (default: FT_JOB, else ftrt)\n"
        "  --store DIR    store root (default: FT_STORE_ROOT, else "
        "/dev/shm/...)\n"
        "  --vnode N      virtual node N (FT_VIRTUAL_NODE_RANKS layouts)\n"
        "  --until-eof    prepare: stop, removing all, when stdin ends\n"
        "  --help         this text\n"
        "See ft-spare(1).\n",
        f);
}

static int fail(const tool_t *t, int code, const char *msg) {
  fprintf(stderr, "ft-spare: %s: %s\n", t->host, msg);
  return code;
}

/* slot<idx> of d is already a prepared file of bytes bytes. */
static int ready(const ft__dir_t *d, const char *name, uint64_t bytes) {
  struct stat st;
  return fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISREG(st.st_mode) && st.st_nlink == 1 &&
         (uint64_t)st.st_size == bytes && (uint64_t)st.st_blocks * 512 >= bytes;
}

/* Whether d holds a whole prepared file (slotN, of any size): one a
 * rebuild may be waiting to take. */
static int whole_files(const ft__dir_t *d) {
  struct stat st;
  for (int i = 0; i < FT_NSLOTS; i++) {
    char name[16];
    snprintf(name, sizeof(name), "slot%d", i);
    if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode))
      return 1;
  }
  return 0;
}

/* A preparation under way (and its lock) and what it answers to. */
typedef struct prep {
  const tool_t *t;
  ft__dir_t dir;        /* the spare directory, locked */
  int parent_fd;        /* the directory the job's store would be made in */
  int lock_fd;          /* the lock on dir (ft__store_lock) */
  const char *job_name; /* the store's last component */
} prep_t;

/* A removal's request (STOP_NAME, holding the remover's pid): one whose
 * remover is gone (a removal killed before it took the lock) is dropped. */
static int asked(const prep_t *p) {
  char text[32] = "";
  int fd = ft__store_openat(&p->dir, STOP_NAME, O_RDONLY, 0);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  long pid = n > 0 ? strtol(text, NULL, 10) : 0;
  if (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM))
    return 1;
  (void)unlinkat(p->dir.fd, STOP_NAME, 0);
  return 0;
}

/* Why a preparation stops early: the host became a node of the job (a
 * rebuild made its store and waits for this lock to take the whole files),
 * or "ft-spare remove" asked (it waits for the lock too).  0: go on. */
enum { GO_ON = 0, STOP_NODE = 1, STOP_ASKED = 2 };
static int stop_why(const prep_t *p) {
  struct stat st;
  if (fstatat(p->parent_fd, p->job_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
    return STOP_NODE;
  if (asked(p))
    return STOP_ASKED;
  /* --until-eof: the launch that asked for this preparation has ended
   * (its input was its only writer): as a removal would ask. */
  struct pollfd in = {.fd = STDIN_FILENO, .events = POLLIN};
  char c;
  if (p->t->until_eof && poll(&in, 1, 0) == 1 &&
      (in.revents & (POLLIN | POLLHUP)) && read(STDIN_FILENO, &c, 1) <= 0)
    return STOP_ASKED;
  return GO_ON;
}

/* --until-eof: the first byte of the input, which says it is passed on
 * from the launch (a command that gives the remote side no input, such as
 * ssh -n, would end it at once and no preparation would ever last).  0, or
 * -1 when it ended first or none came within UNTIL_EOF_WAIT_MS. */
static int input_open(void) {
  struct pollfd in = {.fd = STDIN_FILENO, .events = POLLIN};
  char c;
  return poll(&in, 1, UNTIL_EOF_WAIT_MS) == 1 && read(STDIN_FILENO, &c, 1) == 1
             ? 0
             : -1;
}

/* One prepared file: written as NAME.part (sized first, so that a tmpfs
 * with huge=within_size gives it huge pages; then, a piece at a time,
 * reserved and every page written once, where the kernel can: a tmpfs page
 * that is only allocated is zeroed at its first touch, and on a virtual
 * machine that hands free memory back to its host, that touch also makes
 * the host back it again; measured: 113 MiB on 2 MiB pages written 10-15 ms
 * after this, 108-251 ms for the first touch itself), renamed to NAME once
 * whole.  *why: why it stopped early, else GO_ON: asked to (the part
 * removed), or the host became a node (the part renamed all the same: all
 * zeros and full-sized, for the rebuild waiting for the lock, whose
 * reservation allocates the rest). */
static int make_one(prep_t *p, const char *name, uint64_t bytes, int *why,
                    char *msg, size_t msglen) {
  const char *dir = p->t->spare;
  char part[32];
  snprintf(part, sizeof(part), "%s.part", name);
  /* An older file of another size goes first: never three at once. */
  (void)unlinkat(p->dir.fd, name, 0);
  (void)unlinkat(p->dir.fd, part, 0);
  int fd = ft__store_openat(&p->dir, part, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0)
    return ft__msgf(ft__from_errno(errno), msg, msglen, "%s/%s: open: %s", dir,
                    part, strerror(errno));
  int rc = FT_OK;
  if (ftruncate(fd, (off_t)bytes) != 0)
    rc = ft__msgf(ft__from_errno(errno), msg, msglen,
                  "%s/%s: resize to %" PRIu64 ": %s", dir, part, bytes,
                  strerror(errno));
  uint8_t *map = NULL;
  if (rc == FT_OK && ft__prefault_fd_safe(fd)) {
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    map = m == MAP_FAILED ? NULL : m;
  }
  *why = GO_ON;
  for (uint64_t off = 0; rc == FT_OK && off < bytes; off += FT_PREFAULT_PIECE) {
    uint64_t len =
        bytes - off < FT_PREFAULT_PIECE ? bytes - off : FT_PREFAULT_PIECE;
    int r;
    do
      r = fallocate(fd, 0, (off_t)off, (off_t)len);
    while (r != 0 && errno == EINTR);
    if (r != 0 && (errno == EOPNOTSUPP || errno == ENOSYS))
      rc = ft__msgf(FT_EINVAL, msg, msglen,
                    "%s: its file system cannot reserve space (fallocate: not "
                    "supported): nothing to prepare; keep the store on tmpfs",
                    dir);
    else if (r != 0)
      rc = ft__msgf(ft__from_errno(errno), msg, msglen,
                    "%s/%s: cannot reserve %" PRIu64 " bytes: %s", dir, part,
                    bytes, strerror(errno));
    else if (map)
      ft__prefault(map + off, len, 1);
    if (rc == FT_OK && (*why = stop_why(p)) != GO_ON)
      break;
  }
  if (map)
    munmap(map, bytes);
  close(fd);
  /* Whole, or the host became a node: the rebuild waiting for the lock
   * takes it as it is (its reservation allocates the rest), rather than
   * wait for its pages to be freed here and then allocate them again. */
  if (rc == FT_OK && *why != STOP_ASKED &&
      renameat(p->dir.fd, part, p->dir.fd, name) != 0)
    rc = ft__msgf(ft__from_errno(errno), msg, msglen, "%s/%s: rename: %s", dir,
                  part, strerror(errno));
  if (rc || *why == STOP_ASKED)
    (void)unlinkat(p->dir.fd, part, 0);
  return rc;
}

/* Every entry of the locked spare directory, and the directory. */
static int remove_locked(prep_t *p, char *msg, size_t msglen) {
  return ft__spare_remove_locked(&p->dir, msg, msglen) == FT_OK ? EXIT_OK
                                                                : EXIT_ERR;
}

/* The parent directory (checked as a store is: made where create) and the
 * spare directory in it (made where create), locked as a rebuild that takes
 * its files locks it.  -1 when there is none (not create), else an exit
 * status. */
static int open_locked(const tool_t *t, int create, prep_t *p, char *msg,
                       size_t msglen) {
  char parent[FT_PATH_MAX];
  snprintf(parent, sizeof(parent), "%s", t->spare);
  *strrchr(parent, '/') = '\0';
  p->t = t;
  p->job_name = strrchr(t->store, '/') + 1;
  p->parent_fd = -1;
  ft__dir_t pd;
  int rc = ft__store_open_dir(t->cfg.store_root, parent[0] ? parent : "/",
                              create, &pd, msg, msglen);
  if (rc == FT_OK)
    rc = ft__store_open_dir(t->cfg.store_root, t->spare, create, &p->dir, msg,
                            msglen);
  int lock = -1;
  if (rc == FT_OK && (rc = ft__store_lock(&p->dir, LOCK_WAIT_S, &lock, msg,
                                          msglen)) == FT_EINUSE)
    ft__msgf(rc, msg, msglen,
             "%s: locked by another ft-spare or a rebuild for %.0f s: it "
             "should have let go long before; see which process holds it "
             "(fuser -v %s)",
             t->spare, LOCK_WAIT_S, t->spare);
  if (rc) {
    ft__dir_close(&pd);
    ft__dir_close(&p->dir);
    return rc == FT_ENOENT && !create ? -1
           : rc == FT_ECONFIG         ? EXIT_REFUSED
                                      : EXIT_ERR;
  }
  p->parent_fd = pd.fd; /* owned here now */
  p->lock_fd = lock;
  return EXIT_OK;
}

static void close_locked(prep_t *p) {
  ft__dir_close(&p->dir);
  if (p->parent_fd >= 0)
    close(p->parent_fd);
  if (p->lock_fd >= 0)
    close(p->lock_fd);
}

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
  if (t->until_eof && input_open() != 0)
    return fail(t, EXIT_ERR,
                "--until-eof: its standard input ended (or stayed silent) "
                "before the launch's first byte: the command that reached "
                "this host passes no input on (ssh -n, srun --input=none?); "
                "nothing prepared");
  prep_t p;
  int rc = open_locked(t, 1, &p, msg, sizeof(msg));
  if (rc)
    return fail(t, rc, msg);
  int why = stop_why(&p);
  struct stat st;
  /* A rebuild took the files and removed the directory meanwhile. */
  int gone = fstat(p.dir.fd, &st) == 0 && st.st_nlink == 0;
  if (gone && why == GO_ON)
    why = STOP_NODE;
  if (why == STOP_NODE && !gone && !whole_files(&p.dir)) {
    /* A store of the job and nothing prepared for a rebuild to take: a
     * node of the job, not a spare. */
    (void)remove_locked(&p, NULL, 0);
    close_locked(&p);
    snprintf(msg, sizeof(msg),
             "holds a store of job '%s' (%s): a node of the job, not a "
             "spare; nothing prepared",
             t->cfg.job, t->store);
    return fail(t, EXIT_MEMBER, msg);
  }
  for (int i = 0; rc == FT_OK && why == GO_ON && i < FT_NSLOTS; i++) {
    char name[16];
    snprintf(name, sizeof(name), "slot%d", i);
    if (!ready(&p.dir, name, bytes))
      rc = make_one(&p, name, bytes, &why, msg, sizeof(msg));
  }
  int code = EXIT_OK;
  if (why == STOP_ASKED || rc) /* nothing half prepared, nothing left */
    code = remove_locked(&p, NULL, 0);
  close_locked(&p);
  if (rc == FT_OK || code != EXIT_OK) {
    if (code != EXIT_OK)
      fprintf(stderr, "ft-spare: %s: could not remove %s: remove it by hand\n",
              t->host, t->spare);
    return rc == FT_OK ? code : fail(t, EXIT_ERR, msg);
  }
  if (rc == FT_ENOSPC) {
    size_t n = strlen(msg);
    snprintf(msg + n, sizeof(msg) - n,
             "; no room here for %d slots of the job's node 0: a rebuild "
             "onto this spare would likely fail the same way (ft-restore "
             "exit 5)",
             FT_NSLOTS);
    return fail(t, EXIT_NOROOM, msg);
  }
  return fail(t, EXIT_ERR, msg);
}

static int show(const tool_t *t) {
  char msg[512] = "";
  ft__dir_t d;
  int rc =
      ft__store_open_dir(t->cfg.store_root, t->spare, 0, &d, msg, sizeof(msg));
  if (rc == FT_ENOENT) {
    printf("%s: job %s: nothing prepared\n", t->host, t->cfg.job);
    return EXIT_OK;
  }
  if (rc)
    return fail(t, rc == FT_ECONFIG ? EXIT_REFUSED : EXIT_ERR, msg);
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

/* The spare directory and what is in it; nothing else.  A preparation
 * under way is asked to stop (STOP_NAME) and waited for. */
static int remove_spare(const tool_t *t, char *msg, size_t msglen) {
  ft__dir_t d;
  int rc = ft__store_open_dir(t->cfg.store_root, t->spare, 0, &d, msg, msglen);
  if (rc == FT_ENOENT)
    return EXIT_OK;
  if (rc)
    return rc == FT_ECONFIG ? EXIT_REFUSED : EXIT_ERR;
  /* Whole when it appears (a preparation reads the pid in it). */
  int fd = ft__store_openat(&d, STOP_NAME ".tmp", O_WRONLY | O_CREAT | O_TRUNC,
                            0600);
  if (fd >= 0) {
    char text[32];
    int n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
    int ok = ft__write_all(fd, (const uint8_t *)text, (size_t)n) == 0;
    close(fd);
    if (ok)
      (void)renameat(d.fd, STOP_NAME ".tmp", d.fd, STOP_NAME);
  }
  ft__dir_close(&d);
  prep_t p;
  rc = open_locked(t, 0, &p, msg, msglen);
  if (rc < 0)
    return EXIT_OK; /* removed meanwhile (by a rebuild, or a preparation) */
  if (rc)
    return rc;
  rc = remove_locked(&p, msg, msglen);
  close_locked(&p);
  return rc;
}

static int parse(int argc, char **argv, tool_t *t) {
  static const struct option opts[] = {FT_STOREOPT_OPTIONS,
                                       {"until-eof", no_argument, 0, 'e'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int o, src;
  while ((o = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
    if ((src = ft__storeopt(o, optarg, "ft-spare", &t->cfg, &t->vnode)) != 1) {
      if (src)
        return src;
      continue;
    }
    if (o == 'e') {
      t->until_eof = 1;
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
