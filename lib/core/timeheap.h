/* The core's timer heap is the generic one in codec/timeheap.h (moved there so that the
 * transport's HTTP/2 connections can keep their streams' deadlines in one too: transport/ may
 * not include core/). This header stays so that core files keep naming their own layer's
 * header; it adds nothing. */
#ifndef ISV_CORE_TIMEHEAP_H
#define ISV_CORE_TIMEHEAP_H

#include "core/layer.h"

#include "codec/timeheap.h"

#endif
