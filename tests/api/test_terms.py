"""GET /api/v1/terms: the words of grading, public and cacheable; the learner pages embed them."""

from service.grading.terms import terms_json


def test_the_terms_are_public_and_revalidated_with_an_etag(client):
    response = client.get("/api/v1/terms")
    assert response.status_code == 200 and response.json == terms_json()
    etag = response.headers["ETag"]
    assert "public" in response.headers["Cache-Control"]
    again = client.get("/api/v1/terms", headers={"If-None-Match": etag})
    assert again.status_code == 304 and not again.data


def test_the_learner_pages_embed_them(client):
    import json
    import re

    page = client.get("/learn/clamp-function").get_data(as_text=True)
    block = re.search(r'<script type="application/json" id="gradquiz-terms">(.*?)</script>', page, re.S)
    assert block is not None and json.loads(block.group(1)) == terms_json()
