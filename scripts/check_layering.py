#!/usr/bin/env python3
"""Checks that every #include respects the layers in docs/architecture.md ("Layers").

Usage: scripts/check_layering.py [ROOT]        exit 1 and one line per violation
       scripts/check_layering.py --self-test   plants a wrong include in a copy, expects a failure

The link order in SConscript catches calls that reach up a layer; this catches includes,
which the linker never sees (a header-only dependency, a macro, a struct layout). It also
checks that the model layer (lib/model) allocates, copies, multiplies and communicates only
through lib/backend and lib/dist/comm.h, and that comm.h holds no MPI type."""
import os
import re
import shutil
import sys
import tempfile

# folder -> folders its files may include (itself always allowed)
ALLOWED = {
    'lib/core': [],
    'lib/dist': ['lib/core'],
    'lib/backend': ['lib/core'],
    'lib/backend/cpu': ['lib/core', 'lib/backend'],
    # the CUDA backend: a second table behind the same interface (C, and .cu/.cuh kernels)
    'lib/backend/cuda': ['lib/core', 'lib/backend'],
    'lib/ckpt': ['lib/core'],
    'lib/model': ['lib/core', 'lib/dist', 'lib/backend', 'lib/ckpt'],
    # data/hf: the Hugging Face tokenizer.json files; one layer (one library) with data
    'data': ['lib/core', 'data/hf'],
    'data/hf': ['lib/core', 'data'],
    'goldfish': ['lib/core', 'data'],
    # the corpus index: n-gram windows of a dataset, built and served over lib/dist
    'index': ['lib/core', 'lib/dist', 'data'],
    # the model scans; goldfish: the probe's audit recomputes a run's loss mask from the tokens
    'memscan': ['lib/core', 'lib/dist', 'lib/ckpt', 'lib/model', 'data', 'goldfish', 'index'],
    # memscan: the probe that `train --scan-every` runs (train/train_scan.c)
    'train': ['lib/core', 'lib/dist', 'lib/ckpt', 'lib/model', 'data', 'goldfish', 'memscan'],
    'reports': ['lib/core'],
    # axmem study: one split, a model per mitigation, the scans, one report; the demo runs it
    'study': ['lib/core', 'lib/dist', 'lib/ckpt', 'lib/model', 'data', 'goldfish', 'index',
              'memscan', 'train', 'reports'],
    # Hugging Face model import/export: the model's tensor table and config, checkpoints;
    # lib/dist for the bf16 conversion it shares with the collectives
    'interop': ['lib/core', 'lib/dist', 'lib/ckpt', 'lib/model'],
    # axmem plan and its performance model: the model's shape and per-rank blocks (lib/model),
    # profiles (lib/core JSON), --ckpt's tensor table (lib/ckpt), and --measure's GEMM (the CPU
    # backend's ax_sgemm) and all-reduce (lib/dist)
    'plan': ['lib/core', 'lib/dist', 'lib/backend', 'lib/backend/cpu', 'lib/ckpt', 'lib/model'],
    # the dispatcher, the demo and `axmem version`: every layer's public headers
    'cli': ['lib/core', 'lib/dist', 'lib/backend', 'lib/ckpt', 'lib/model', 'data', 'goldfish',
            'index', 'memscan', 'train', 'reports', 'interop', 'plan', 'study'],
}
# every command folder declares its entry point in the dispatcher's list
ALWAYS = {'cli/commands.h'}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# The model layer touches memory, BLAS and MPI only through lib/backend and lib/dist's typed
# collectives (docs/backends.md), so a device backend can
# replace them: no libc allocation or copy, no ax_sgemm, no MPI call, type or header there.
MODEL_DIR = 'lib/model'
MODEL_RAW = re.compile(r'\b(aligned_alloc|malloc|calloc|realloc|free|memcpy|memmove|memset|'
                       r'ax_sgemm|MPI_\w+)\b|<mpi\.h>|grid_mpi\.h')
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
# the collective API is backend-neutral: no MPI type in its header (only comm.c sees MPI)
COMM_HEADER = 'lib/dist/comm.h'
MPI_TYPE = re.compile(r'\bMPI_\w+\b|<mpi\.h>|grid_mpi\.h')


def folder_of(path):
    return os.path.dirname(path)


def check(root):
    bad = []
    for layer, allowed in ALLOWED.items():
        d = os.path.join(root, layer)
        if not os.path.isdir(d):
            bad.append(f'{layer}: folder missing (update scripts/check_layering.py)')
            continue
        for name in sorted(os.listdir(d)):
            if not name.endswith(('.c', '.h', '.cu', '.cuh')):
                continue
            rel = f'{layer}/{name}'
            text = open(os.path.join(d, name), encoding='utf-8', errors='replace').read()
            for inc in INCLUDE.findall(text):
                if inc in ALWAYS or '/' not in inc:
                    continue
                target = folder_of(inc)
                if target == layer or target in allowed:
                    continue
                bad.append(f'{rel}: includes "{inc}", but {layer} may include only '
                           f'{", ".join([layer] + allowed)}')
    return bad


def banned(root, rel, pattern, why):
    text = open(os.path.join(root, rel), encoding='utf-8', errors='replace').read()
    code = COMMENT.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text)  # keeps the lines
    return [f'{rel}:{code.count(chr(10), 0, m.start()) + 1}: uses {m.group(0)}; {why}'
            for m in pattern.finditer(code)]


def check_model_raw(root):
    bad = []
    d = os.path.join(root, MODEL_DIR)
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if name.endswith(('.c', '.h')):
            bad += banned(root, f'{MODEL_DIR}/{name}', MODEL_RAW,
                          'the model layer goes through lib/backend (ax_dev_alloc, ax_copy, '
                          'ops) and lib/dist/comm.h')
    if os.path.isfile(os.path.join(root, COMM_HEADER)):
        bad += banned(root, COMM_HEADER, MPI_TYPE, 'MPI types belong in lib/dist/grid_mpi.h')
    return bad


def self_test(root):
    tmp = tempfile.mkdtemp(prefix='axmem-layering.')
    try:
        for layer in ALLOWED:
            shutil.copytree(os.path.join(root, layer), os.path.join(tmp, layer),
                            dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns('*.o', '*.a'))
        if check(tmp) or check_model_raw(tmp):
            print('self-test: the clean copy already fails')
            return 1
        with open(os.path.join(tmp, 'lib/model/model.c'), 'a') as f:
            f.write('\n/* memcpy in a comment is fine */\nstatic void f(void *d) { memcpy(d, d, 0); }\n')
        bad = check_model_raw(tmp)
        if not (len(bad) == 1 and 'lib/model/model.c' in bad[0] and 'memcpy' in bad[0]):
            print('self-test: a planted memcpy in lib/model was not reported as expected:', bad)
            return 1
        print('self-test: a planted memcpy in lib/model is caught')
        # one planted include per rule kind: a low layer reaching up, and the top layer (cli)
        # reaching into a backend's internals
        for rel, inc in (('lib/core/log.c', 'index/index.h'),
                         ('cli/main.c', 'lib/backend/cpu/cpu.h')):
            path = os.path.join(tmp, rel)
            text = open(path).read()
            with open(path, 'a') as f:
                f.write(f'\n#include "{inc}"\n')
            bad = check(tmp)
            if not (len(bad) == 1 and rel in bad[0] and inc in bad[0]):
                print(f'self-test: a planted {rel} -> {inc} include was not reported as expected:',
                      bad)
                return 1
            print(f'self-test: a planted {rel} -> {inc} include is caught')
            open(path, 'w').write(text)
        return 0
    finally:
        shutil.rmtree(tmp)


def main():
    args = sys.argv[1:]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if args and args[0] == '--self-test':
        return self_test(root)
    if args:
        root = args[0]
    bad = check(root) + check_model_raw(root)
    for line in bad:
        print('layering:', line)
    if not bad:
        print('layering: every include respects the layers; lib/model uses no libc memory, BLAS or MPI; comm.h no MPI type')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
