; C++: what a file declares, for packer/summaries/treesitter.py.

(type_definition type: [(struct_specifier body: (_)) (union_specifier body: (_)) (class_specifier body: (_))] @ignore
  declarator: (type_identifier) @name) @definition.struct
(type_definition type: (enum_specifier body: (_)) @ignore
  declarator: (type_identifier) @name) @definition.enum
(type_definition declarator: (_) @name) @definition.type
(alias_declaration name: (_) @name) @definition.type

(namespace_definition name: (_) @name) @definition.module
(class_specifier name: (_) @name body: (_)) @definition.class
(struct_specifier name: (_) @name body: (_)) @definition.struct
(union_specifier name: (_) @name body: (_)) @definition.struct
(enum_specifier name: (_) @name body: (_)) @definition.enum

; Functions and methods, defined or declared, returning values, pointers or references.
; A declaration in a class body is a method (a constructor, a destructor).
(field_declaration_list (declaration declarator: (function_declarator declarator: (_) @name)) @definition.method)
(function_definition declarator: (function_declarator declarator: (_) @name)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name))) @definition.function
(function_definition declarator: (reference_declarator (function_declarator declarator: (_) @name))) @definition.function
(declaration declarator: (function_declarator declarator: (_) @name)) @definition.function
(declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name))) @definition.function
(declaration declarator: (reference_declarator (function_declarator declarator: (_) @name))) @definition.function
(field_declaration declarator: (function_declarator declarator: (_) @name)) @definition.method
(field_declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name))) @definition.method
(field_declaration declarator: (reference_declarator (function_declarator declarator: (_) @name))) @definition.method

(field_declaration declarator: [
  (field_identifier) @name
  (pointer_declarator declarator: (field_identifier) @name)
  (reference_declarator (field_identifier) @name)
  (array_declarator declarator: (field_identifier) @name)
]) @definition.field
(enumerator name: (_) @name) @definition.field

(preproc_def name: (_) @name value: (_)) @definition.constant
(preproc_function_def name: (_) @name) @definition.function

(translation_unit (declaration declarator: [
  (identifier) @name
  (init_declarator declarator: (identifier) @name)
  (init_declarator declarator: (pointer_declarator declarator: (identifier) @name))
]) @definition.variable)
(namespace_definition body: (declaration_list (declaration declarator: [
  (identifier) @name
  (init_declarator declarator: (identifier) @name)
]) @definition.variable))

(preproc_include path: (_) @import)
