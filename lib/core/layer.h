/* Every header of lib/core/ includes this first. lib/meson.build compiles each layer as a
 * library of its own with ISV__LAYER_<NAME> defined, so an include that goes up the layers
 * fails to compile: codec and transport may not include core/ headers (docs/ARCHITECTURE.md). */
#ifndef ISV_CORE_LAYER_H
#define ISV_CORE_LAYER_H
#if defined(ISV__LAYER_CODEC) || defined(ISV__LAYER_TRANSPORT)
#error "core/ is above this layer: codec and transport may not include its headers"
#endif
#endif
