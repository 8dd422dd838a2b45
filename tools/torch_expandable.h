/*
 * torch_expandable.h — a model of PyTorch's CUDA caching allocator with
 * expandable segments (one virtual range per stream and pool, grown and
 * shrunk by whole pages; docs/baselines.md lists the rules it follows).
 */
#ifndef RELO_TOOLS_TORCH_EXPANDABLE_H
#define RELO_TOOLS_TORCH_EXPANDABLE_H

#include "baseline_model.h"

/** The model's functions (see baseline_model.h). */
extern const baseline_model_ops torch_expandable_ops;

#endif /* RELO_TOOLS_TORCH_EXPANDABLE_H */
