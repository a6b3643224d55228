package memory

import (
	"encoding/json"

	"github.com/svcdev/svc/internal/llm"
)

// The tools' names.
const (
	SearchTool = "memory_search"
	ReadTool   = "memory_read"
	WriteTool  = "memory_write"
)

// schema is a JSON Schema object node.
type schema map[string]any

// memoryParam is the `memory` argument's schema.
func memoryParam(set memorySet) schema {
	return schema{
		"type":        "string",
		"enum":        set.choices(),
		"description": "The memory: its id, or its name when no other of the agent's memories has it.",
	}
}

// object is the schema of an arguments object with props, requiring required.
func object(props schema, required ...string) json.RawMessage {
	b, err := json.Marshal(schema{
		"type": "object", "properties": props, "required": required, "additionalProperties": false,
	})
	if err != nil {
		// The schema is built from strings and numbers; it always encodes.
		panic("memory tools: encode a tool schema: " + err.Error())
	}
	return b
}

func searchDef(set memorySet) llm.Tool {
	return llm.Tool{
		Name: SearchTool,
		Description: "Search one of your memories for records about a query, best match first. " +
			"Answers {\"memory\", \"records\": [{\"id\", \"content\", \"metadata\", \"score\"}]}; a higher score is a better match " +
			"(scores compare only within one search).\n" + set.describe(),
		Parameters: object(schema{
			"memory": memoryParam(set),
			"query": schema{
				"type": "string", "minLength": 1, "maxLength": MaxQueryBytes,
				"description": "What to look for, in words.",
			},
			"limit": schema{
				"type": "integer", "minimum": 1, "maximum": MaxLimit, "default": DefaultLimit,
				"description": "The most records to answer.",
			},
		}, "memory", "query"),
	}
}

func readDef(set memorySet) llm.Tool {
	return llm.Tool{
		Name: ReadTool,
		Description: "Read one record of one of your memories by its id (from memory_search or memory_write). " +
			"Answers {\"memory\", \"id\", \"content\", \"metadata\"}.\n" + set.describe(),
		Parameters: object(schema{
			"memory": memoryParam(set),
			"id":     schema{"type": "string", "minLength": 1, "maxLength": 64, "description": "The record's id."},
		}, "memory", "id"),
	}
}

func writeDef(set memorySet) llm.Tool {
	return llm.Tool{
		Name: WriteTool,
		Description: "Write a new record to one of your memories, for this and later runs to find with memory_search. " +
			"Answers {\"memory\", \"id\"} with the new record's id. Content is at most 16 KiB and metadata, a JSON object, " +
			"at most 4 KiB; the member run_id of metadata is set by the service to the run that wrote the record.\n" + set.describe(),
		Parameters: object(schema{
			"memory":  memoryParam(set),
			"content": schema{"type": "string", "minLength": 1, "description": "The text to remember (at most 16 KiB)."},
			"metadata": schema{
				"type": "object", "description": "Facts about the content (source, topic...), at most 4 KiB as JSON.",
			},
		}, "memory", "content"),
	}
}
