"""The floor for this stack in bench/api_load.py: Flask under the same gunicorn settings, doing nothing.

    gunicorn -c gunicorn.conf.py bench.hello_app:app

One route answering a small JSON body, as the API does: no database, no auth, no validation.
"""

from flask import Flask, jsonify

app = Flask(__name__)


@app.get("/")
def hello():
    return jsonify(hello="world")
