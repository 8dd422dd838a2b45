/*
 * torch_classic.h — a model of PyTorch's CUDA caching allocator in its
 * default configuration (segments never grow; docs/baselines.md lists the
 * rules it follows).
 */
#ifndef RELO_TOOLS_TORCH_CLASSIC_H
#define RELO_TOOLS_TORCH_CLASSIC_H

#include "baseline_model.h"

/** The model's functions (see baseline_model.h). */
extern const baseline_model_ops torch_classic_ops;

#endif /* RELO_TOOLS_TORCH_CLASSIC_H */
