#!/bin/bash
# GPU captures: compute-sanitizer --log-file per process, torch start-up records, a CUB fault
set -x
export PYTHONUNBUFFERED=1
CAP=$PWD/.cap; W=/tmp/cap; R=$W/logs; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --target /tmp/site $CAP/whl/*.whl; export PYTHONPATH=/tmp/site
CS=compute-sanitizer; $CS --version > $R/cs-version.txt
# 1. channels: a forged summary on stdout and a child process, --log-file %p
#( cd $W && $CS --tool memcheck --log-file $R/forge.%p.log python3 $CAP/forge.py > $R/forge.stdout 2> $R/forge.stderr; echo "rc=$?" >> $R/forge.stdout )
# 2. CUB fault with follow-on records
( cd $W && nvcc -O2 -lineinfo -arch=sm_90 -o cubfault $CAP/cubfault.cu && PYTORCH_NO_CUDA_MEMORY_CACHING=1 $CS --tool memcheck --log-file $R/cubfault.%p.log ./cubfault > $R/cubfault.stdout 2>&1; echo "rc=$?" >> $R/cubfault.stdout )
# 3. extension-cpp: fixed and control wheels built at once, then its tests + ours under memcheck
cp -r $CAP/ecpp $W/fixed; cp -r $CAP/ecpp $W/control; (cd $W/control && patch -p1 < $CAP/muladd-temp.patch)
export MAX_JOBS=8 TORCH_CUDA_ARCH_LIST=9.0
( cd $W/fixed && time python3 -m pip wheel -q --no-deps --no-build-isolation -w $W/whl-fixed . > $R/build-fixed.log 2>&1 ) &
( cd $W/control && time python3 -m pip wheel -q --no-deps --no-build-isolation -w $W/whl-control . > $R/build-control.log 2>&1 ) &
wait
ls -la $W/whl-*
for v in fixed control; do
  python3 -m pip install -q --no-index --no-deps --target $W/site-$v $W/whl-$v/*.whl
  cp $CAP/test_noncontig.py $W/$v/test/
  ( cd $W/$v && PYTHONPATH=$W/site-$v:/tmp/site PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 300 $CS --tool memcheck --log-file $R/ecpp-$v.%p.log python3 -P -m pytest -q -p no:cacheprovider test/ > $R/ecpp-$v.stdout 2>&1; echo "rc=$?" >> $R/ecpp-$v.stdout ) &
done
wait
cp $W/whl-fixed/*.whl $R/ 2>/dev/null
ls -la $R; grep -h "ERROR SUMMARY" $R/*.log | sort | uniq -c
tar czf $OUT/capture.tgz -C $W logs
