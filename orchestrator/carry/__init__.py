"""Evidence that carries to a new head that changes nothing executable: the two proofs.

- `classify`: each changed file of a variant's tree, old against new: Python whose AST
  is the same once docstrings are removed (comments never reach the AST), C, C++ or CUDA
  whose token stream is the same once the preprocessor has removed the comments, or
  executable (anything else, and anything that cannot be read as one of those).
- `sections`: the binaries the two trees build, compared on what executes (every section
  the loader maps, the build id left out), not on debug information.

A verdict may carry only where both hold for every changed file and every binary.
"""
