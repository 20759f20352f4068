; C: what a file declares, for packer/summaries/treesitter.py.

; A typedef of a struct, union or enum is one definition: the typedef, with the fields.
(type_definition type: [(struct_specifier body: (_)) (union_specifier body: (_))] @ignore
  declarator: (type_identifier) @name) @definition.struct
(type_definition type: (enum_specifier body: (_)) @ignore
  declarator: (type_identifier) @name) @definition.enum
(type_definition declarator: (_) @name) @definition.type

(struct_specifier name: (_) @name body: (_)) @definition.struct
(union_specifier name: (_) @name body: (_)) @definition.struct
(enum_specifier name: (_) @name body: (_)) @definition.enum

; Functions, defined or declared, returning values or pointers.
(function_definition declarator: (function_declarator declarator: (_) @name)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name))) @definition.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name)))) @definition.function
(declaration declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(declaration declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))) @definition.function

(field_declaration declarator: [
  (field_identifier) @name
  (pointer_declarator declarator: (field_identifier) @name)
  (pointer_declarator declarator: (pointer_declarator declarator: (field_identifier) @name))
  (array_declarator declarator: (field_identifier) @name)
  (function_declarator declarator: (parenthesized_declarator (pointer_declarator declarator: (field_identifier) @name)))
]) @definition.field
(enumerator name: (_) @name) @definition.field

(preproc_def name: (_) @name value: (_)) @definition.constant
(preproc_function_def name: (_) @name) @definition.function

; File-scope variables.
(translation_unit (declaration declarator: [
  (identifier) @name
  (init_declarator declarator: (identifier) @name)
  (init_declarator declarator: (pointer_declarator declarator: (identifier) @name))
  (array_declarator declarator: (identifier) @name)
  (init_declarator declarator: (array_declarator declarator: (identifier) @name))
]) @definition.variable)

(preproc_include path: (_) @import)
