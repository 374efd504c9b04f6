"""The built-in price table, regenerated from reviewed data.

`python3 infra/prices.py` writes shared/src/costs/prices.json from infra/prices/table.json (which
model takes which price, and the prices LiteLLM lacks) and infra/prices/litellm.json (the excerpt
of LiteLLM's price map those entries use). `--check` (run by infra/test.sh) fails when the
committed prices.json is not what they give. `--update` reads the map anew from the LiteLLM wheel
pinned in infra/versions.env (PyPI, MIT; `litellm/model_prices_and_context_window_backup.json`)
and rewrites the excerpt: review the diff, then regenerate. Nothing is fetched at run time.
"""

import datetime
import json
import pathlib
import subprocess
import sys
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
TABLE = ROOT / "infra/prices/table.json"
EXCERPT = ROOT / "infra/prices/litellm.json"
OUTPUT = ROOT / "shared/src/costs/prices.json"
# The fields of a LiteLLM entry this table reads (flat per-token prices; tiers above 200k tokens
# and batch or cached prices are not used: this product's prompts are far shorter, and a cached
# token is charged at most the full price).
FIELDS = ("input_cost_per_token", "output_cost_per_token", "mode", "source")


def version():
    for line in (ROOT / "infra/versions.env").read_text().splitlines():
        if line.startswith("LITELLM_VERSION="):
            return line.split("=", 1)[1].strip()
    sys.exit("infra/versions.env has no LITELLM_VERSION")


def update():
    table = json.loads(TABLE.read_text())
    pinned = version()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
             "--disable-pip-version-check", "-d", tmp, f"litellm=={pinned}"],
            check=True,
        )
        wheel = next(pathlib.Path(tmp).glob("litellm-*.whl"))
        with zipfile.ZipFile(wheel) as z:
            prices = json.loads(z.read("litellm/model_prices_and_context_window_backup.json"))
    wanted = sorted(set(table["litellm"].values()))
    missing = [k for k in wanted if k not in prices]
    if missing:
        sys.exit(f"LiteLLM {pinned} has no entry {missing}: choose another in {TABLE.name}")
    excerpt = {
        "litellm": pinned,
        "read": datetime.date.today().isoformat(),
        "entries": {k: {f: prices[k][f] for f in FIELDS if f in prices[k]} for k in wanted},
    }
    EXCERPT.write_text(json.dumps(excerpt, indent=2, ensure_ascii=False) + "\n")
    print(f"{EXCERPT.relative_to(ROOT)}: {len(wanted)} entries of LiteLLM {pinned}; review the diff")


def per_1k(per_token):
    return round(per_token * 1000, 12)


def generate():
    table = json.loads(TABLE.read_text())
    excerpt = json.loads(EXCERPT.read_text())
    if excerpt["litellm"] != version():
        sys.exit(f"{EXCERPT.name} is LiteLLM {excerpt['litellm']}'s, the pin {version()}: run `python3 infra/prices.py --update`")
    keys = [key for section in ("litellm", "own", "routes") for key in table[section]]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        sys.exit(f"priced twice in {TABLE.name}: {twice}")
    out = {}
    for key, name in table["litellm"].items():
        entry = excerpt["entries"].get(name)
        if entry is None:
            sys.exit(f"{key}: {name} is not in {EXCERPT.name}: run `python3 infra/prices.py --update`")
        if "input_cost_per_token" not in entry:
            sys.exit(f"{key}: LiteLLM's {name} has no flat input price: price it under `own`")
        origin = f" ({entry['source']})" if "source" in entry else ""
        out[key] = {
            "input_per_1k_usd": per_1k(entry["input_cost_per_token"]),
            "output_per_1k_usd": per_1k(entry.get("output_cost_per_token", 0)),
            "source": f"LiteLLM {excerpt['litellm']} {name}{origin}",
            "as_of": excerpt["read"],
        }
    for key, own in table["own"].items():
        out[key] = own
    for key, target in table["routes"].items():
        if target not in out:
            sys.exit(f"{key}: routes to {target}, which the table does not price")
        out[key] = dict(out[target], source=f"{out[target]['source']}, passed through by {key.split('/')[0]}")
    lines = [f"  {json.dumps(k, ensure_ascii=False)}: {json.dumps(out[k], ensure_ascii=False)}" for k in sorted(out)]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main():
    args = sys.argv[1:]
    if args not in ([], ["--check"], ["--update"]):
        sys.exit("usage: python3 infra/prices.py [--check | --update]")
    if args == ["--update"]:
        update()
    text = generate()
    models = f"{OUTPUT.relative_to(ROOT)}: {len(json.loads(text))} models"
    if args == ["--check"]:
        if OUTPUT.read_text() != text:
            sys.exit(f"{OUTPUT.relative_to(ROOT)} is not what infra/prices/ gives: run `python3 infra/prices.py`")
        print(f"{models}, as infra/prices/ gives")
        return
    OUTPUT.write_text(text)
    print(models)

main()
