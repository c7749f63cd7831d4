"""The OpenAI Agents SDK against `chorus gateway`: one agent with two tools runs a three-turn
loop (a call, another call, the answer), once over Chat Completions and once over Responses.
Prints one JSON object with what the tools were called with and what the agent answered; the
Rust test asserts on it."""

import asyncio
import json
import sys

from agents import (Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, function_tool,
                    set_tracing_disabled)
from openai import AsyncOpenAI

set_tracing_disabled(True)
client = AsyncOpenAI(base_url=sys.argv[1], api_key="unused", max_retries=0)
MODEL = "gpt-oss-20b"
calls = []


@function_tool
def get_weather(city: str) -> str:
    """The current weather of a city."""
    calls.append(["get_weather", city])
    return f"sunny in {city}"


@function_tool
def get_time(city: str) -> str:
    """The local time of a city."""
    calls.append(["get_time", city])
    return f"noon in {city}"


async def run(model):
    calls.clear()
    agent = Agent(name="assistant", instructions="Answer with the tools' results.",
                  tools=[get_weather, get_time], model=model)
    result = await Runner.run(agent, "What are the weather and the time in Paris?")
    return {"final": result.final_output, "calls": list(calls),
            "model_turns": len(result.raw_responses)}


async def main():
    seen = {
        "chat": await run(OpenAIChatCompletionsModel(model=MODEL, openai_client=client)),
        "responses": await run(OpenAIResponsesModel(model=MODEL, openai_client=client)),
    }
    print(json.dumps(seen))


asyncio.run(main())
