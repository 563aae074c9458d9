/* What the store's unit tests build on (store_fixture.c): a standard slot
 * geometry, version bytes written and checked as the SMP writes them,
 * slots made and opened in the test's store directory (tmpdir.h, sdir),
 * and a sample node metadata.  Each helper fails the test when a call it
 * makes fails. */
#ifndef FT_TESTS_STORE_FIXTURE_H
#define FT_TESTS_STORE_FIXTURE_H

#include <stdint.h>

#include "snapshot/store.h"

#define JOB "job-a"
#define PAGE 4096u

/* ---- a standard geometry: three ranks of odd sizes ---- */

extern const uint64_t rank_bytes3[3];

/* g: the three ranks of rank_bytes3 under a k+m code, chunks just large
 * enough for k of them to hold the data. */
void geom3(ft__slot_geom_t *g, uint32_t k, uint32_t m);

/* ---- version bytes: each byte a function of version, rank, offset ---- */

/* Write version v's bytes: rank regions [from, to) fraction in eighths. */
void fill_ranks(ft__slot_t *s, uint64_t v, int from8, int to8);
/* Write version v's parity bytes. */
void fill_parity(ft__slot_t *s, uint64_t v);
/* Every byte of version v is where it was written. */
int holds(const ft__slot_t *s, uint64_t v);
/* Write, seal and commit version v in s, as the SMP does. */
void write_version(ft__slot_t *s, uint64_t v);

/* ---- slots of the test's store (sdir), job JOB ---- */

void create_slot(ft__slot_t *s, int idx, const ft__slot_geom_t *g);
void open_slot(ft__slot_t *s, int idx);

/* ---- metadata ---- */

/* Node 2 of 5 of job JOB, in group 0 of a 3+2 code at position 2, with 4
 * local ranks (8..11) holding 1, 2, 0 and 4 buffers; freed with
 * ft__meta_free. */
ft__meta_t *sample_meta(void);

#endif
