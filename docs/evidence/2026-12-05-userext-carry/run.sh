cd /tmp/ext-check
export PYTHONPATH=/work/main COLUMNS=200
P=/work/main/.venv/bin/python
s=$(date +%s); $P -m orchestrator run base.yaml --backend asan --out base-out --cache-dir cache > base.txt 2>&1; echo "base rc=$? $(( $(date +%s)-s )) s"
s=$(date +%s); $P -m orchestrator run head.yaml --backend asan --out head-out --cache-dir cache --carry-from base-out > head.txt 2>&1; echo "head rc=$? $(( $(date +%s)-s )) s"
grep -iE "carried|verdict" head.txt | cut -c1-400
$P -m orchestrator verify head-out | tail -1
