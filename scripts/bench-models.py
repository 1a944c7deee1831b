"""Conversion models for a benchmark corpus's apps: the sample models, each given one of the
app ids stored in an SQLite store, so that every postback decodes into events and revenue.

    python3 scripts/bench-models.py STORE.sqlite FOLDER SamplePostbacks/models/*.json

Used by scripts/bench.sh and scripts/export-bench.sh.
"""
import json, sqlite3, sys

database, folder, templates = sys.argv[1], sys.argv[2], sorted(sys.argv[3:])
apps = [row[0] for row in sqlite3.connect(database).execute("SELECT DISTINCT app_id FROM postbacks ORDER BY 1")]
for index, app in enumerate(apps):
    model = json.load(open(templates[index % len(templates)]))
    model.get("schema", model)["appId"] = str(app)
    json.dump(model, open(f"{folder}/app-{app}.json", "w"))
