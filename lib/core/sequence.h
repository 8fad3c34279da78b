/* The live sequences of one model (sequence batching, Triton's "direct" strategy): a sequence
 * is born with a request that sets sequence_start, is bound to one instance of the model for
 * its whole life (so its requests run there, one at a time, in arrival order), carries the
 * slot where the backend keeps its state, and ends when its sequence_end request has run, when
 * it stays idle past the model's timeout, when a new start takes its id, or with the model.
 * The table is keyed by the id the client chose: a uint64 or a string, never both. Loop
 * thread only. */
#ifndef ISV_CORE_SEQUENCE_H
#define ISV_CORE_SEQUENCE_H

#include "core/layer.h"

#include "codec/mem.h"

#include <stddef.h>
#include <stdint.h>

#include "core/timeheap.h"

typedef struct isv__seq isv__seq;
struct isv__seq {
  isv__seq *hnext;
  uint64_t id;       /* the numeric id (0 when the id is a string) */
  char *id_str;      /* the string id, NUL-terminated; NULL when numeric */
  unsigned instance; /* where its requests run */
  void *state;       /* the backend's slot (isv_request_sequence_state) */
  unsigned pending;  /* its requests queued or running */
  int ended;         /* no longer in the table: its end came, or a new start took its id */
  int end_reason;    /* ISV_SEQUENCE_* reason given to the backend */
  isv__timed idle;   /* armed while nothing of it is pending */
  void *model;       /* the isv_model it belongs to */
};

typedef struct isv__seqtab {
  isv__seq **buckets;
  size_t n_buckets;
  size_t n; /* live sequences in the table */
  const isv_mem *mem;
} isv__seqtab;

void isv__seqtab_init(isv__seqtab *t, const isv_mem *mem);
/* Frees the table, not the sequences (the caller ends them first: isv__seqtab_pop). */
void isv__seqtab_free(isv__seqtab *t);
/* The live sequence with this id (id_str NULL: numeric), or NULL. */
isv__seq *isv__seqtab_find(const isv__seqtab *t, uint64_t id, const char *id_str, size_t len);
/* A new live sequence in the table (id_str copied); NULL when out of memory. */
isv__seq *isv__seqtab_add(isv__seqtab *t, uint64_t id, const char *id_str, size_t len,
                          unsigned instance);
/* Take s out of the table (it stays allocated: isv__seq_free when its last request is done). */
void isv__seqtab_remove(isv__seqtab *t, isv__seq *s);
/* Any live sequence, taken out of the table; NULL when empty (for tearing a model down). */
isv__seq *isv__seqtab_pop(isv__seqtab *t);
void isv__seq_free(isv__seq *s);

#endif
