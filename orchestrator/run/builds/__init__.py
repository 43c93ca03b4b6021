"""The build kinds, one module each (the contracts: docs/your-extension.md): `jit` (csorch's
build.py contract), `pip` (the `wheel` and `pip` kinds: pip over the tree's setup.py or
pyproject.toml), `prebuilt` (a release binary as users install it) and `command` (an argv).
`step` holds what they share: the build's context, its steps and the compilers' environment.
run/build.py drives them through the cache."""
