/*
 * Tags of the rebuild's point-to-point messages on r->comm, in one list so
 * that no two kinds of message share one: the group table a survivor hands
 * a lost node's helper (prepare.c) and an erased chunk's pieces and end
 * status along its chain (chain.c).  Tag 4 is the offline checker's
 * (verify.c).
 */
#ifndef FT_RECOVERY_TAGS_H
#define FT_RECOVERY_TAGS_H

enum {
  TAG_META_LEN = 1,
  TAG_META = 2,
  TAG_PIECE = 3,
  TAG_META_ROOM = 5,
  TAG_CRC = 6 /* after a chunk's pieces: the last link's status, the CRC */
};

#endif
