// kernel-check hermetic stub: CUB's declarations live in cub/cub.cuh.
#pragma once
#include "cub.cuh"
