/*
 * Where chunks live (docs/design.md section 6).  Pure functions, no I/O, no
 * allocation except ft__groups_form: every SMP computes the same answer from
 * the same inputs, which is how they agree on the layout without talking.
 *
 * Groups: the job's nodes are cut into erasure-coding groups of n = k + m.
 * Stripes: inside a group of n members (positions 0..n-1) there are n
 * stripes; stripe s keeps its m parity chunks on positions (s + j) % n,
 * j = 0..m-1 (codec index k + j), and takes one data chunk from each of the
 * other k positions: codec data index d (0..k-1) is position (s + m + d) % n,
 * which contributes its own local data chunk number d (each node's data is
 * cut into k equal chunks).  Every position takes part in every stripe, once.
 */
#ifndef FT_EC_LAYOUT_H
#define FT_EC_LAYOUT_H

#include <stddef.h>

typedef struct ft__groups {
  int nnodes, ngroups, m;
  int *group_of; /* [nnodes] group index of each node */
  int *pos_of;   /* [nnodes] position of the node inside its group */
  int *size;     /* [ngroups] members of each group (n = k_g + m) */
  int **members; /* [ngroups][size[g]] node indices in position order */
} ft__groups_t;

/*
 * Form the groups.  Nodes 0..nnodes-1 are already ordered by the caller
 * (failure domain, then hostname).  They are cut into floor(nnodes / (k+m))
 * groups; the nnodes % (k+m) leftover nodes join the last groups one each
 * (round-robin from the last group backwards, so with few groups one may get
 * several), so a group may have k+m+1 or more members; each group's own k is
 * size - m.
 *
 * domains: NULL, or nnodes strings naming each node's failure domain (a NULL
 * or "" entry: unknown, taken as a domain of its own).  With domains, nodes
 * are dealt round-robin, domain by domain, over the groups so that no group
 * holds two nodes of one domain; that works exactly when no domain has more
 * nodes than there are groups.  Without domains, group 0 takes the first
 * nodes, group 1 the next, and so on.  Either way a group's members are in
 * ascending node order, which is their position order.
 *
 * Errors, with one line in msg saying what would work: FT_ECONFIG for
 * nnodes < 1, k < 1, m < 0, k+m > 255, k+m > nnodes, a group that leftovers
 * would push past 255 members, or domains that cannot be kept apart;
 * FT_EINVAL for out == NULL (msg untouched); FT_ENOMEM (msg empty).  msg may
 * be NULL.  On success *out owns arrays to free with ft__groups_free; on
 * failure *out is zeroed (freeing it is a no-op).
 */
int ft__groups_form(int nnodes, const char *const *domains, int k, int m,
                    ft__groups_t *out, char *msg, size_t msglen);

/* Free what ft__groups_form allocated and zero *g; NULL is accepted. */
void ft__groups_free(ft__groups_t *g);

/*
 * Rotated stripes of one group of n members, m parity, k = n - m >= 1.  Each
 * returns FT_EINVAL (negative) when an argument is out of range: n < 1,
 * m < 0, m >= n, or s, pos in 0..n-1, j in 0..m-1, d and c in 0..k-1 not met.
 */
int ft__layout_parity_pos(int n, int m, int s, int j); /* holder of parity j */
int ft__layout_data_pos(int n, int m, int s, int d);   /* source of data d */
/* Role of position pos in stripe s: codec index 0..k-1 (data; its local
 * chunk number equals that index) or k+j (it holds parity j of stripe s). */
int ft__layout_role(int n, int m, int s, int pos);
/* Stripe into which position pos puts its local data chunk c. */
int ft__layout_data_stripe(int n, int m, int pos, int c);
/* Stripe whose parity j is kept by position pos. */
int ft__layout_parity_stripe(int n, int m, int pos, int j);

/*
 * lost[0..n-1]: nonzero = that position is lost.  Returns how many stripes
 * lost more than m of their chunks (0: every stripe can be rebuilt) and,
 * when bad is not NULL (capacity n), writes their indices in ascending
 * order.  FT_EINVAL for bad n/m or lost == NULL.  Every position is in
 * every stripe, so the answer is 0 (at most m lost) or n (more than m).
 */
int ft__layout_lost_stripes(int n, int m, const unsigned char *lost, int *bad);

/*
 * Chunk size of a group: ceil(max_node_bytes / k) rounded up to a multiple of
 * 64, so that every node's data padded with zeros is exactly k chunks.
 * Returns 0 for max_node_bytes == 0, for k < 1 and when the result would not
 * fit in a size_t.
 */
size_t ft__layout_chunk_bytes(size_t max_node_bytes, int k);

#endif
