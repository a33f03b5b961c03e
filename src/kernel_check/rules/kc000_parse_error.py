"""## What it does
Reports a source file that kernel-check could not fully analyze: clang reported errors
(the first ones are quoted), the file is binary, too large, unreadable, or a Python file
has a syntax error.

## Why is this bad?
Rules only run on code clang could type, so every declaration that contains an error is
skipped: a file with parse errors is only partly checked, and a hook that silently skipped
it would hide real problems. The most common cause is a missing include directory or a
CUDA header that the hermetic prelude does not declare.

## Example
```cpp
#include <sgl_kernel/does_not_exist.cuh>  // fatal error: file not found
```

## Use instead
Fix the include path (`include-dirs` in `[tool.kernel-check]`, or run with
`--mode system` where a CUDA install exists), or fix the syntax error. A file that can
never parse can be excluded with `exclude` in the configuration.
"""
