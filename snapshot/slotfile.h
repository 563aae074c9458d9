/*
 * Slot files: a slot made, shaped to a geometry, mapped, opened and
 * validated, closed; its pages faulted in ahead of the writes; its header
 * written through the functions that keep its checksum (begin a version,
 * its step, its CRCs, its state); its chunks reached and their CRCs sealed
 * and verified.  The format they hold is snapshot/slot.h, its state
 * machine there too.
 *
 * Messages follow snapshot/store.h: (msg, msglen) gets one line on failure,
 * and msg may be NULL.
 */
#ifndef FT_SNAPSHOT_SLOTFILE_H
#define FT_SNAPSHOT_SLOTFILE_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot/dir.h"
#include "snapshot/format.h"
#include "snapshot/slot.h"

/* An open, mapped slot. */
typedef struct ft__slot {
  int idx;
  int fd;
  char path[FT_PATH_MAX + 48];
  size_t map_bytes;
  uint8_t *map;
  ft__slot_hdr_t *hdr;
  int prefault_ok; /* ft__prefault_fd_safe(fd), asked at mapping */
  int unreserved;  /* made where the file system cannot reserve: sparse */
} ft__slot_t;

/* Reserve [0, bytes) of fd's file in its file system (fallocate), so that
 * no write into a shared mapping of it meets a full store as a SIGBUS;
 * FT_PREFAULT_PIECE bytes at a time with between(arg) after each piece
 * (between may be NULL).  0, or -1 with errno (ENOSPC: no room).  A file
 * system that cannot reserve (EOPNOTSUPP) leaves the file sparse: 1. */
int ft__store_reserve(int fd, uint64_t bytes, void (*between)(void *),
                      void *arg);
/* Create (or resize) slot idx in dir with geometry g, state EMPTY.  Its
 * bytes are reserved in the file system first (fallocate; skipped where the
 * file system cannot), so no later write into the mapping meets a full
 * store as a SIGBUS: a store without room fails here, FT_ENOSPC with a
 * message naming the slot.  On any failure once the file was emptied
 * (sizing, reserving, mapping) the file is removed; one that could not be
 * emptied is left as it was.  msg may be NULL. */
int ft__slot_create(ft__slot_t *s, const ft__dir_t *dir, int idx,
                    const char *job, const ft__slot_geom_t *g, char *msg,
                    size_t msglen);
/* The same, reserving FT_PREFAULT_PIECE bytes at a time and calling
 * between(arg) after each piece (on tmpfs a reservation allocates the
 * pages: an SMP keeps its heartbeats going). */
int ft__slot_create_paced(ft__slot_t *s, const ft__dir_t *dir, int idx,
                          const char *job, const ft__slot_geom_t *g,
                          void (*between)(void *), void *arg, char *msg,
                          size_t msglen);
/* Slot idx made from a prepared spare's file where there is one: the file
 * dir/slot<idx> of spare (ft__spare_dir; ft-spare made it, its pages
 * already allocated and zeroed) is renamed into dir as the slot and then
 * sized, reserved, mapped and given an EMPTY header as ft__slot_create
 * does, without emptying it first.  Where spare is NULL or closed, has no
 * such file, or holds something else there (not a regular file of this
 * user's with a single link), or the rename fails (another file system):
 * ft__slot_create, the file in spare left as it was (one that, renamed,
 * turns out not to be such a file is removed).  A slot idx already in dir
 * is never replaced by a prepared file: it is made as ft__slot_create
 * makes it.  *taken: 1 when the prepared file became the slot. */
int ft__slot_create_from(ft__slot_t *s, const ft__dir_t *dir, int idx,
                         const char *job, const ft__slot_geom_t *g,
                         const ft__dir_t *spare, int *taken, char *msg,
                         size_t msglen);
/* Fault in every page of a slot just made (MADV_POPULATE_WRITE, in bulk:
 * a rebuild then writes into memory already there instead of taking one
 * fault a page).  Best effort: nothing happens where the kernel lacks it
 * (before Linux 5.14), memory runs short (the writes then fault as
 * before), or the store is on a disk and the kernel older than 6.9
 * (base/pages.h). */
void ft__slot_prefault(ft__slot_t *s);
/* The same, FT_PREFAULT_PIECE bytes at a time, calling between(arg) after
 * each piece: an SMP keeps its heartbeats going (a slot of tens of GB
 * takes tens of seconds to fault in, longer than FT_TIMEOUT). */
#define FT_PREFAULT_PIECE (64u << 20)
void ft__slot_prefault_paced(ft__slot_t *s, void (*between)(void *), void *arg);
/* The same for [off, off + len) of the slot's mapping, writable (a trainer
 * before its first copy into its region). */
void ft__slot_prefault_range(ft__slot_t *s, uint64_t off, uint64_t len);
/* The same for a range whose pages the file already holds, written once
 * (a slot file ft-spare prepared): on tmpfs (or ramfs) mapped as a read
 * would map them, many a fault (the kernel maps the pages around a read
 * fault that are there and written; writable, as such a mapping needs no
 * write notice), where a write fault maps one page.  The 2-vCPU VM, 341 MiB
 * prepared: 36-46 ms against 78-95 ms, no fault on the writes after.  A
 * page never written (only reserved, or beyond what was prepared) costs a
 * fault as before; elsewhere (a disk file system) it is
 * ft__slot_prefault_range. */
void ft__slot_prefault_made(ft__slot_t *s, uint64_t off, uint64_t len);

/* Open and validate an existing slot.  FT_ENOENT when it does not exist.
 * msg may be NULL. */
int ft__slot_open(ft__slot_t *s, const ft__dir_t *dir, int idx, const char *job,
                  char *msg, size_t msglen);
void ft__slot_close(ft__slot_t *s);

/* The state (FT_SLOT_STATE_INVALID if the word went bad since the slot
 * was validated). */
uint32_t ft__slot_state(const ft__slot_t *s);
void ft__slot_set_state(ft__slot_t *s, uint32_t state);

/*
 * The writers of covered fields.  Each recomputes hdr_crc after its change
 * -- but only when the header was intact before it: a header damaged in
 * memory is never blessed with a fresh checksum, it stays refused.
 */
/* Is the header intact now: checksum and state word? */
int ft__slot_intact(const ft__slot_t *s);
/* Start filling a version: FILLING, version, step, epoch. */
void ft__slot_begin(ft__slot_t *s, uint64_t version, uint64_t step,
                    uint64_t epoch, uint64_t layout);
/* The training step the version holds (known once every trainer wrote). */
void ft__slot_set_step(ft__slot_t *s, uint64_t step);
/* The CRCs of the k data chunks, computed elsewhere (ec/exchange.c
 * computes them as the chunks go out). */
void ft__slot_set_data_crcs(ft__slot_t *s, const uint64_t *crc);
/* The CRCs of all k+m chunks, computed elsewhere (recovery/chain.c: by
 * the link that made each rebuilt chunk's bytes, as it sent them). */
void ft__slot_set_crcs(ft__slot_t *s, const uint64_t *crc);

/* CRC64 of data chunk i (0..k-1) or parity chunk k+j, as held now. */
uint64_t ft__slot_chunk_crc(const ft__slot_t *s, uint32_t chunk);

/* Chunks [first, first + n) about to be read for the first time in this
 * process (a survey, a restore): their pages faulted in in one pass
 * (base/pages.h).  Changes nothing. */
void ft__slot_prefault_read(const ft__slot_t *s, uint32_t first, uint32_t n);
uint8_t *ft__slot_chunk(const ft__slot_t *s, uint32_t chunk);
/* Compute and store the CRCs of the data chunks (LOCAL needs them). */
void ft__slot_seal_data(ft__slot_t *s);
/* Compute and store the CRCs of the parity chunks. */
void ft__slot_seal_parity(ft__slot_t *s);
/* Verify chunks [first, first+n): FT_ECORRUPT naming the first bad chunk.
 * msg may be NULL. */
int ft__slot_verify(const ft__slot_t *s, uint32_t first, uint32_t n, char *msg,
                    size_t msglen);
/* Verify every chunk overlapping [off, off+len) of the file.  msg may be
 * NULL. */
int ft__slot_verify_range(const ft__slot_t *s, uint64_t off, uint64_t len,
                          char *msg, size_t msglen);

/* Remove slot idx's file from dir, as ft__store_unlink does.  msg may be
 * NULL. */
int ft__slot_unlink(const ft__dir_t *dir, int idx, char *msg, size_t msglen);

/* Is slot idx of dir blank: absent, shorter than its magic, or with an
 * all-zero magic (what a crash leaves while ft__slot_create resizes it)?
 * A blank slot holds no version; one that is not blank yet fails
 * ft__slot_open is damaged and may have held a committed one. */
int ft__slot_blank(const ft__dir_t *dir, int idx);

#endif
