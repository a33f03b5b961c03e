"""## What it does
Compiles every instantiation that a kernel spec (or wrapper) declares with `nvcc` and
reports each one that fails. The compiler's own message is the finding's detail, located
at the first `file(line): error` it names. The other instantiations still build.

## Why is this bad?
A template is only compiled for the arguments it is instantiated with: a header that
parses fine can still fail for `bf16_t` or for the PDL variant, and the JIT build only
finds out at the first call, on the user's machine, in the middle of a model run.

## Example
```cpp
template <typename T>
void scale(tvm::ffi::TensorView dst, tvm::ffi::TensorView src) {
  T two = 2;  // error for bf16_t: no constructor from int
}
```

## Use instead
Fix the code for every declared instantiation (here `T two = static_cast<T>(2.0f);`),
or stop declaring an instantiation the kernel does not support.
"""
