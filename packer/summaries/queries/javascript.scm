; JavaScript: what a file declares, for packer/summaries/treesitter.py.
; The first pattern that matches a node decides its kind.

; Functions and classes held by variables come before plain variables.
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function
(variable_declarator name: (identifier) @name value: (class)) @definition.class
(variable_declarator
  value: (call_expression function: (identifier) @_require (#eq? @_require "require"))) @ignore

(function_declaration name: (_) @name) @definition.function
(generator_function_declaration name: (_) @name) @definition.function
(export_statement "default" @name
  value: [(function_expression) (arrow_function)] @definition.function)
(export_statement "default" @name value: (class) @definition.class)

(class_declaration name: (_) @name) @definition.class
(method_definition name: (_) @name) @definition.method
(field_definition property: (_) @name) @definition.field

; CommonJS: `module.exports = class ...`, `exports.f = function ...`, `A.prototype.f = ...`.
(program (expression_statement
  (assignment_expression left: (member_expression) right: (class name: (_) @name)) @definition.class))
(program (expression_statement
  (assignment_expression
    left: (member_expression property: (_) @name)
    right: [(function_expression) (arrow_function) (generator_function)]) @definition.function))

; Variables: top-level and exported ones; constants by `const`.
(program (lexical_declaration "const" (variable_declarator name: (identifier) @name) @definition.constant))
(program (lexical_declaration (variable_declarator name: (identifier) @name) @definition.variable))
(program (variable_declaration (variable_declarator name: (identifier) @name) @definition.variable))
(export_statement (lexical_declaration "const" (variable_declarator name: (identifier) @name) @definition.constant))
(export_statement (lexical_declaration (variable_declarator name: (identifier) @name) @definition.variable))

; What the file brings in and passes on.
(import_statement source: (string (string_fragment) @import))
(call_expression
  function: (identifier) @_require (#eq? @_require "require")
  arguments: (arguments . (string (string_fragment) @import)))
(export_statement source: (_)) @reexport
(export_statement (export_clause) !source) @reexport
(export_statement "default" value: (identifier)) @reexport
