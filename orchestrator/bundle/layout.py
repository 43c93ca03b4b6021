"""The results bundle's layout: its files and their schemas.

OUT/results.json    versioned: the experiment, sources, builds, attempts, per-case
                    results and the judgement (what `csorch report`/`gate --from` read)
OUT/manifest.json   the evidence: tree and patch digests, binary hashes, versions of
                    torch/CUDA/driver/compute-sanitizer/compilers, GPU names, the argv
                    and environment of every attempt, and the sha256 of every log
OUT/journal.jsonl   the run's progress, for --resume (its sha256 in the manifest's files)
OUT/logs/           build/<variant>.log and <variant>/<run>/<case>/r<k>[...].log
OUT/trees/          the trees the evidence was built from (bundle/trees.py), each file's
                    sha256 in the manifest's files
"""

RESULTS = "results.json"
MANIFEST = "manifest.json"
RESULTS_SCHEMA = "csorch.results/1"
MANIFEST_SCHEMA = "csorch.manifest/1"
#: files beside the two documents whose sha256 the manifest records under "files"
COVERED = ("journal.jsonl",)
#: directories whose every file the manifest records under "files" too
COVERED_DIRS = ("trees",)
#: the session lock (`run.lock`): a file csorch holds while it writes the bundle; it is no
#: evidence (its content is the holder's pid), so it is neither listed nor unlisted
LOCK = ".csorch.lock"
#: the signature over a manifest (`csorch gate --sign`), beside it
SIGNATURE = "manifest.json.sig"
LOGS = "logs"
