; Java: what a file declares, for packer/summaries/treesitter.py.

(class_declaration name: (_) @name) @definition.class
(interface_declaration name: (_) @name) @definition.interface
(enum_declaration name: (_) @name) @definition.enum
(record_declaration name: (_) @name) @definition.class
(annotation_type_declaration name: (_) @name) @definition.interface

(method_declaration name: (_) @name) @definition.method
(constructor_declaration name: (_) @name) @definition.method
(compact_constructor_declaration name: (_) @name) @definition.method
(annotation_type_element_declaration name: (_) @name) @definition.method

(field_declaration
  (modifiers "static" "final")
  declarator: (variable_declarator name: (_) @name)) @definition.constant
(field_declaration declarator: (variable_declarator name: (_) @name)) @definition.field
(constant_declaration declarator: (variable_declarator name: (_) @name)) @definition.constant
(enum_constant name: (_) @name) @definition.field

(import_declaration (_) @import)
