// kernel-check hermetic stub: the declarations live in kernel_check_cuda_prelude.h.
#pragma once
#include "../kernel_check_cuda_prelude.h"
