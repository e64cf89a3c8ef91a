/* frontend_internal.h: what the frontend's own files share: limits, error
 * helpers, the tokenizer, the syntax tree and its parser, the fusion
 * interpreter and the inputs-list reader.  Not for other modules.
 *
 * Reading a definition is three steps, none of which runs Python:
 *   text --fv_frontend_lex_next--> tokens --fv_frontend_parse--> syntax tree
 *        --fv_frontend_build_fusion--> fv_fusion (+ the `inputs = [...]` list)
 *        --fv_frontend_read_inputs--> distributions and extents per input.
 * Every error message has the form "path:line:column: message".
 */
#ifndef FV_FRONTEND_INTERNAL_H
#define FV_FRONTEND_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frontend/frontend.h"

/* ---------------------------------------------------------------- limits */

enum {
    FV_FRONTEND_MAX_FILE_SIZE = 8 << 20,   /* bytes of a .py or .sweep file */
    FV_FRONTEND_MAX_NAME = 63,             /* characters of an identifier */
    FV_FRONTEND_MAX_VALUE_NAME = 31,       /* characters of a fusion value's name */
    FV_FRONTEND_MAX_NESTING = 64,          /* brackets, indentation, expression depth */
    FV_FRONTEND_MAX_NUMBER_LENGTH = 256,   /* characters of a number literal */
    FV_FRONTEND_MAX_SYNTAX_BYTES = 96 << 20 /* memory for one file's syntax tree */
};

/* Largest extent of one dimension and largest element count of one tensor
 * that the frontend accepts (keeps every extent product inside int64). */
#define FV_FRONTEND_MAX_EXTENT ((int64_t)1 << 40)
#define FV_FRONTEND_MAX_ELEMENTS ((int64_t)1 << 50)

/* ---------------------------------------------------------------- errors */

/* Raises `status` with the message "path:line:column: <formatted>" and
 * returns `status`. */
fv_status fv_frontend_error_at(fv_status status, const char *path, int line, int column,
                               const char *format, ...) __attribute__((format(printf, 5, 6)));

/* Re-raises the current error (from the IR builder or fv_case_*) as
 * "path:line:column: message".  A message that already starts with
 * "line:column: " (the builder's location) keeps that location.  Returns
 * `status`. */
fv_status fv_frontend_error_relocate(fv_status status, const char *path, int line, int column);

/* ------------------------------------------------------------- tokenizer */

typedef enum fv_frontend_token_kind {
    FV_TOKEN_END,      /* end of the file (repeats) */
    FV_TOKEN_NEWLINE,  /* end of a logical line */
    FV_TOKEN_INDENT,
    FV_TOKEN_DEDENT,
    FV_TOKEN_NAME,
    FV_TOKEN_INTEGER,
    FV_TOKEN_FLOAT,
    FV_TOKEN_STRING,
    FV_TOKEN_OPERATOR  /* punctuation; `text` holds 1 or 2 characters */
} fv_frontend_token_kind;

typedef struct fv_frontend_token {
    fv_frontend_token_kind kind;
    int line, column;  /* 1-based; column counts bytes */
    const char *text;  /* points into the source; not NUL-terminated */
    size_t length;
    int64_t integer;   /* FV_TOKEN_INTEGER */
    double real;       /* FV_TOKEN_FLOAT */
} fv_frontend_token;

typedef struct fv_frontend_lexer {
    const char *path;
    const char *text;
    size_t size;
    size_t position;
    int line;
    size_t line_start;   /* offset of the current line's first byte */
    int indents[FV_FRONTEND_MAX_NESTING + 1]; /* indentation stack; [0] = 0 */
    int indent_depth;
    int pending_dedents;
    int bracket_depth;
    bool at_line_start;  /* the next token begins a logical line */
    bool line_has_tokens;
} fv_frontend_lexer;

void fv_frontend_lexer_init(fv_frontend_lexer *lexer, const char *path, const char *text,
                            size_t size);

/* The next token.  FV_ERR_INPUT (with location) for a malformed token, a
 * bad indentation, nesting beyond the limits or a byte that is not Python. */
fv_status fv_frontend_lex_next(fv_frontend_lexer *lexer, fv_frontend_token *token);

/* "newline", "end of file", "name 'T3'", "number 12", "'('"... for messages. */
void fv_frontend_token_describe(const fv_frontend_token *token, char *buffer, size_t size);

/* ------------------------------------------------------------ syntax tree */

typedef enum fv_frontend_node_kind {
    FV_NODE_NAME,      /* text = identifier (True, False and None included) */
    FV_NODE_INTEGER,   /* integer */
    FV_NODE_FLOAT,     /* real */
    FV_NODE_STRING,    /* text = the raw token, quotes included */
    FV_NODE_ATTRIBUTE, /* child . text */
    FV_NODE_CALL,      /* child ( items ) with keyword arguments as FV_NODE_KEYWORD */
    FV_NODE_KEYWORD,   /* text = child */
    FV_NODE_LIST,      /* [ items ] */
    FV_NODE_TUPLE,     /* ( items ) with a comma, or () */
    FV_NODE_UNARY,     /* operator child */
    FV_NODE_BINARY     /* child operator right */
} fv_frontend_node_kind;

typedef struct fv_frontend_node {
    fv_frontend_node_kind kind;
    int line, column;    /* where the expression starts */
    const char *text;    /* see the kinds */
    int length;
    char operator_char;  /* UNARY and BINARY: '+', '-', '*' or '/' */
    int64_t integer;
    double real;
    struct fv_frontend_node *child;
    struct fv_frontend_node *right;
    struct fv_frontend_node *items; /* first element, linked through `next` */
    struct fv_frontend_node *next;
    int count;                      /* number of items */
    bool parenthesized;
} fv_frontend_node;

typedef enum fv_frontend_statement_kind {
    FV_STATEMENT_IMPORT,      /* names: the root NAME of each imported module */
    FV_STATEMENT_FROM_IMPORT, /* names: the root NAME of the module */
    FV_STATEMENT_DEF,         /* name, names: parameters, body */
    FV_STATEMENT_WITH,        /* value: context expression, name: the `as` target, body */
    FV_STATEMENT_ASSIGN,      /* targets = value */
    FV_STATEMENT_EXPRESSION,  /* value */
    FV_STATEMENT_PASS
} fv_frontend_statement_kind;

typedef struct fv_frontend_statement {
    fv_frontend_statement_kind kind;
    int line, column;
    fv_frontend_node *targets; /* ASSIGN: NAME nodes, linked through `next` */
    int target_count;
    fv_frontend_node *value;
    fv_frontend_node *names;
    int name_count;
    fv_frontend_node *name;    /* DEF: the function name; WITH: the `as` target */
    fv_frontend_node *alias;   /* IMPORT/FROM_IMPORT: the first `as` alias, if any */
    struct fv_frontend_statement *body;
    struct fv_frontend_statement *next;
} fv_frontend_statement;

typedef struct fv_frontend_arena_block fv_frontend_arena_block;

typedef struct fv_frontend_syntax {
    fv_frontend_statement *statements; /* top-level statements, linked through `next` */
    fv_frontend_arena_block *blocks;   /* owns every node and statement */
    size_t allocated;
} fv_frontend_syntax;

/* Parses the Python subset into `syntax` (zeroed first).  On failure returns
 * FV_ERR_INPUT or FV_ERR_UNSUPPORTED with "path:line:column: message" and
 * leaves nothing to free.  Never reads outside text[0, size). */
fv_status fv_frontend_parse(const char *path, const char *text, size_t size,
                            fv_frontend_syntax *syntax);
void fv_frontend_syntax_free(fv_frontend_syntax *syntax);

/* True if `node` is the name `name`. */
bool fv_frontend_node_is_name(const fv_frontend_node *node, const char *name);

/* Writes a chain of names and attributes ("torch.testing.make_tensor") into
 * `buffer`; returns false (buffer "") if `node` is anything else or too long. */
bool fv_frontend_dotted_name(const fv_frontend_node *node, char *buffer, size_t size);

/* ------------------------------------------------------- call arguments */

/* Matches a call's positional and keyword arguments to `parameters` (in
 * order); slots[i] receives the argument node or NULL.  `function` names the
 * call in messages ("define_tensor").  FV_ERR_INPUT for too many positional
 * arguments, an unknown keyword or an argument given twice. */
fv_status fv_frontend_bind_arguments(const char *path, const fv_frontend_node *call,
                                     const char *function, const char *const *parameters,
                                     int parameter_count, const fv_frontend_node **slots);

/* A number literal, with any unary signs: *value, and whether it was an
 * integer (no '.' or exponent).  True/False are not numbers here.  Returns
 * false for anything else. */
bool fv_frontend_literal_number(const fv_frontend_node *node, double *value, bool *is_integer);

/* An integer literal with any unary signs; false for anything else. */
bool fv_frontend_literal_integer(const fv_frontend_node *node, int64_t *value);

/* ------------------------------------------------------------ interpreter */

/* Runs the statements of a parsed definition file against the IR builder.
 * On success *fusion holds the built fusion (one reference) and
 * *inputs_list the `inputs = [...]` list node (or NULL).  On failure returns
 * the error and *fusion is NULL. */
fv_status fv_frontend_build_fusion(const char *path, const fv_frontend_syntax *syntax,
                                   fv_fusion **fusion, const fv_frontend_node **inputs_list);

/* Reads an `inputs = [...]` list into definition->distributions, extents and
 * scalar_values, checking it against the fusion's inputs.  On failure returns
 * FV_ERR_INPUT or FV_ERR_UNSUPPORTED with a located message. */
fv_status fv_frontend_read_inputs(const char *path, const fv_frontend_node *list,
                                  fv_definition *definition);

/* ------------------------------------------------------------- helpers */

/* Reads a whole file (at most FV_FRONTEND_MAX_FILE_SIZE bytes) into a
 * NUL-terminated buffer the caller frees.  FV_ERR_NOT_FOUND, FV_ERR_IO or
 * FV_ERR_INPUT (too large) with "path:1:1: message". */
fv_status fv_frontend_read_file(const char *path, char **text, size_t *size);

/* The file name without directories and without its last extension, cut to
 * fit `size`. */
void fv_frontend_file_stem(const char *path, char *buffer, size_t size);

/* Binds every symbolic input extent of `c` to definition->extents (from
 * its inputs list).  Errors from fv_case_bind, without location. */
fv_status fv_frontend_bind_input_extents(const fv_definition *definition, fv_case *c);

/* Checks that every tensor of the case has at most FV_FRONTEND_MAX_ELEMENTS
 * elements at its bound sizes (so later products cannot overflow), then runs
 * fv_case_check_bound.  Errors carry no location (callers relocate them). */
fv_status fv_frontend_check_case_sizes(const fv_case *c);

#endif
