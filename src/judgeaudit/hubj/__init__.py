"""HUB-J: human-grounded bias discovery (`discover`), quantification (`quantify`) and
mitigation (`mitigate`) for LLM judges. See docs in each module; the LLM modules (G_*) are in
`prompts` and `gmodules`, strict JSON reading in `llmjson`, data splits in `splits`."""
