; Ruby: what a file declares, for packer/summaries/treesitter.py.

(class name: (_) @name) @definition.class
(module name: (_) @name) @definition.module
(singleton_class value: (_) @name) @definition.class
(method name: (_) @name) @definition.method
(singleton_method name: (_) @name) @definition.method

(call
  method: (identifier) @_attr (#match? @_attr "^attr_(reader|writer|accessor)$")
  arguments: (argument_list . (_) @name)) @definition.field
(call
  method: (identifier) @_alias (#match? @_alias "^(alias_method|define_method|delegate|def_delegators?)$")
  arguments: (argument_list . (_) @name)) @definition.method
(alias name: (_) @name) @definition.method
; A declarative call in a class or module body names what it declares by its first symbol
; (`set :port, 4567`, `has_many :posts`, `option :verbose, default: false`): in Ruby such calls
; are the definitions.
(class body: (body_statement
  (call
    method: (identifier) @_dsl (#not-match? @_dsl "^(attr_(reader|writer|accessor)|alias_method|define_method|delegate|def_delegators?|private|protected|public|private_constant|private_class_method|public_class_method|module_function|include|extend|prepend|require|require_relative|autoload|raise)$")
    arguments: (argument_list . (simple_symbol) @name)) @definition.field))
(module body: (body_statement
  (call
    method: (identifier) @_dsl (#not-match? @_dsl "^(attr_(reader|writer|accessor)|alias_method|define_method|delegate|def_delegators?|private|protected|public|private_constant|private_class_method|public_class_method|module_function|include|extend|prepend|require|require_relative|autoload|raise)$")
    arguments: (argument_list . (simple_symbol) @name)) @definition.field))
(assignment left: (constant) @name) @definition.constant

(call
  method: (identifier) @_require (#match? @_require "^(require|require_relative|autoload)$")
  arguments: (argument_list (string (string_content) @import)))
