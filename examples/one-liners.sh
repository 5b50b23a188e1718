#!/bin/sh
# Shell one-liners, runnable as written from the examples/ folder after `make` (they use tok/).
set -e

# ids of a string, and back
echo -n "hello world" | bpecli encode -t tok
echo -n "hello world" | bpecli encode -t tok | bpecli decode -t tok; echo

# how many tokens each line of a file takes
head -n 5 sample.txt | bpecli encode -t tok --lines --format count

# how a text splits
bpecli inspect tok --text "Return the lowest index in S where substring sub is found."

# shard a compressed JSONL corpus (one {"text": ...} per line) with two workers, in a folder of its own
scratch=$(mktemp -d)
python3 -c "import json; print(json.dumps({'text': 'one document'})); print(json.dumps({'text': 'another'}))" | gzip > "$scratch/docs.jsonl.gz"
bpecli encode -t tok "$scratch/docs.jsonl.gz" --out "$scratch/shards" --workers 2 -q
bpecli inspect "$scratch/shards" --json | python3 -c "import json, sys; print(json.load(sys.stdin)['total_tokens'], 'tokens')"
rm -r "$scratch"

# the first shard back to text
bpecli decode -t tok shards/train_00000.npy | head -c 200; echo
