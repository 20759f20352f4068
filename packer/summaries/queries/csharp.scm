; C#: what a file declares, for packer/summaries/treesitter.py.

(namespace_declaration name: (_) @name) @definition.module
(class_declaration name: (_) @name) @definition.class
(struct_declaration name: (_) @name) @definition.struct
(interface_declaration name: (_) @name) @definition.interface
(record_declaration name: (_) @name) @definition.class
(enum_declaration name: (_) @name) @definition.enum
(delegate_declaration name: (_) @name) @definition.type

(method_declaration name: (_) @name) @definition.method
(constructor_declaration name: (_) @name) @definition.method
(destructor_declaration name: (_) @name) @definition.method
(operator_declaration) @name @definition.method
(conversion_operator_declaration) @name @definition.method
(indexer_declaration) @name @definition.field
(property_declaration name: (_) @name) @definition.field
(event_declaration name: (_) @name) @definition.field

(field_declaration
  (modifier "const")
  (variable_declaration (variable_declarator name: (_) @name))) @definition.constant
(field_declaration (variable_declaration (variable_declarator name: (_) @name))) @definition.field
(event_field_declaration (variable_declaration (variable_declarator name: (_) @name))) @definition.field
(enum_member_declaration name: (_) @name) @definition.field

(using_directive (_) @import)
