"""The official `openai` client against sleuth's gateway, changed only by base_url: a plain and a streamed chat
completion, each with its citations. Prints one JSON line of what it saw; exits non-zero on any failure.

Usage: python3 openai_chat.py BASE_URL API_KEY QUESTION EXPECTED
"""
import json
import sys

import openai

base_url, api_key, question, expected = sys.argv[1:5]
client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=60)

models = [m.id for m in client.models.list()]
assert models, "no model listed"

plain = client.chat.completions.create(model=models[0], messages=[{"role": "user", "content": question}])
content = plain.choices[0].message.content
citations = (plain.model_extra or {}).get("citations") or []
assert expected in content, f"{expected!r} not in the answer {content!r}"
assert plain.choices[0].finish_reason == "stop", plain.choices[0].finish_reason
assert citations, "no citations in the response"
assert all(c.get("title") and c.get("text") for c in citations), citations
assert plain.usage is not None

parts, last = [], None
for chunk in client.chat.completions.create(
    model=models[0], messages=[{"role": "user", "content": question}], stream=True
):
    if chunk.choices and chunk.choices[0].delta and chunk.choices[0].delta.content:
        parts.append(chunk.choices[0].delta.content)
    if chunk.choices and chunk.choices[0].finish_reason:
        last = chunk
streamed = "".join(parts)
assert expected in streamed, f"{expected!r} not in the streamed answer {streamed!r}"
assert last is not None, "no chunk with a finish_reason"
stream_citations = (last.model_extra or {}).get("citations") or []
assert stream_citations, "no citations in the final chunk"

print(json.dumps({
    "models": models,
    "answer": content,
    "citations": len(citations),
    "first_citation": citations[0]["title"],
    "streamed": streamed,
    "stream_citations": len(stream_citations),
}))
