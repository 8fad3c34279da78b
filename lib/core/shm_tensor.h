/* Tensors in system shared memory: a request's inputs read from a region, its requested
 * outputs written into one (Triton's shared memory extension; the regions themselves are
 * core/shm.h's). Above the request: these fail the request they work for. */
#ifndef ISV_CORE_SHM_TENSOR_H
#define ISV_CORE_SHM_TENSOR_H

#include "core/layer.h"

#include "core/request.h"
#include "core/shm.h"

/* Input `name` of r (datatype dt, count elements, `bytes` the shape's byte size for fixed-size
 * types) read from the region ref names: *data is a private copy in r's arena (in place: a
 * pointer into the mapping; for BYTES: an isv_bytes array in r's arena whose elements point
 * into either), *byte_size its size, and r holds a reference to the region until it is freed.
 * 0, or r failed with ISV_EBADREQ naming the problem (a parameter missing, unknown region,
 * offset + byte_size outside the region, byte_size not what the shape needs, misaligned data,
 * the object shrunk below the region) or ISV_ENOMEM. */
int isv__shm_input(isv_request *r, const isv__shm_ref *ref, const char *name, isv_datatype dt,
                   size_t count, size_t bytes, void **data, size_t *byte_size);
/* Requested output o of r is written into the region ref names (o->dest set; r holds a
 * reference): in place, o->dest->p points into the mapping; else o->dest->shm names the region
 * and isv__shm_write_output copies the output there after the backend. 0, or r failed as above. */
int isv__shm_output(isv_request *r, const isv__shm_ref *ref, isv__req_output *o);
/* Copy output t (need bytes: BYTES in their u32-LE length + bytes form) into the region of d
 * (d->shm) with pwrite. 0, or r failed with ISV_EBADREQ naming the region when its object was
 * shrunk below [offset, offset + need) — pwrite would grow it back, so it is refused first —
 * or the write fell short, ISV_ENOMEM. Any thread; the one handling r. */
int isv__shm_write_output(isv_request *r, const isv__out_dest *d, const isv_tensor *t,
                          size_t need);

#endif
