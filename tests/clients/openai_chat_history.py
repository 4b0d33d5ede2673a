"""A chat as a chat client holds it: the official `openai` client sends the whole history with every turn, and a
follow-up is resolved against it, including a history sleuth never saw (pasted from elsewhere). Prints one JSON
line of what it saw; exits non-zero on any failure.

Usage: python3 openai_chat_history.py BASE_URL
"""
import json
import sys
import urllib.request

import openai

base_url = sys.argv[1]
client = openai.OpenAI(base_url=base_url, api_key="unused-on-loopback", max_retries=0, timeout=60)


def understood(completion):
    """The question as sleuth understood it, from GET /v1/requests/{id}."""
    request_id = completion.model_extra["sleuth"]["request_id"]
    with urllib.request.urlopen(f"{base_url}/requests/{request_id}", timeout=30) as response:
        return json.load(response)["question"].rstrip("?")


def turn(history, question):
    history.append({"role": "user", "content": question})
    completion = client.chat.completions.create(model="sleuth", messages=history)
    answer = completion.choices[0].message.content
    history.append({"role": "assistant", "content": answer})
    return answer, understood(completion)


chat = [{"role": "system", "content": "Answer from the documents."}]
seen = []
for question in ["Who created Naruto?", "When was he born?", "Where was he born?"]:
    answer, asked = turn(chat, question)
    seen.append({"question": question, "understood": asked, "answer": answer.splitlines()[0]})

assert "Masashi Kishimoto" in seen[0]["answer"] or "Masashi Kishimoto" in chat[2]["content"], seen
assert seen[1]["understood"] == "When was Masashi Kishimoto born", seen
assert seen[2]["understood"] == "Where was Masashi Kishimoto born", seen
assert "Okayama" in chat[-1]["content"], chat[-1]["content"]

# A history the client brings from elsewhere: sleuth answered none of it.
pasted = [
    {"role": "user", "content": "Which studio did Hayao Miyazaki co-found?"},
    {"role": "assistant", "content": "He co-founded Studio Ghibli in 1985."},
]
answer, asked = turn(pasted, "Which city is it based in?")
assert asked == "Which city is Studio Ghibli based in", asked
assert "Tokyo" in answer, answer

print(json.dumps({"chat": seen, "pasted": {"understood": asked, "answer": answer.splitlines()[0]}}))
